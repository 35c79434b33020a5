import { posix } from 'node:path';
import { SourceError } from '../../model/source-error.js';
import type { WorkbookArchive } from './archive.js';
import { readXml } from './xml.js';

/** One sheet as the workbook lists it, in tab order. */
export interface SheetInfo {
  name: string;
  /** 1-based position in the workbook's tab order (hidden sheets count). */
  position: number;
  /** The part holding its cells; null when the relationship is missing. */
  part: string | null;
  kind: 'worksheet' | 'chartsheet' | 'other';
}

/** What the rows of a sheet need from the rest of the workbook. */
export interface WorkbookInfo {
  sheets: SheetInfo[];
  sharedStringsPart: string | null;
  stylesPart: string | null;
  /** Dates count from 1904-01-01 (old Mac workbooks), not 1900. */
  date1904: boolean;
}

interface Relationship {
  type: string;
  target: string;
}

const DEFAULT_WORKBOOK = 'xl/workbook.xml';

/**
 * Find the workbook part (through the package relationships, falling back to
 * xl/workbook.xml), its sheets in tab order and the parts they refer to.
 */
export async function readWorkbookInfo(archive: WorkbookArchive): Promise<WorkbookInfo> {
  const file = archive.file;
  const rootRels = archive.has('_rels/.rels') ? await readRelationships(archive, '_rels/.rels', '') : new Map<string, Relationship>();
  const officeDocument = [...rootRels.values()].find((r) => r.type.endsWith('/officeDocument'))?.target;
  const workbookPart = officeDocument && archive.has(officeDocument) ? officeDocument : DEFAULT_WORKBOOK;
  if (!archive.has(workbookPart)) {
    throw new SourceError('WRONG_FORMAT', `${file}: a zip archive without ${DEFAULT_WORKBOOK}, so not an XLSX workbook`, { file, setting: 'type' });
  }
  const dir = posix.dirname(workbookPart);
  const base = dir === '.' ? '' : `${dir}/`;
  const relsPart = `${base}_rels/${posix.basename(workbookPart)}.rels`;
  const rels = archive.has(relsPart) ? await readRelationships(archive, relsPart, base) : new Map<string, Relationship>();

  const listed: Array<{ name: string; rId: string }> = [];
  let date1904 = false;
  await readXml(file, workbookPart, archive.text(workbookPart), {
    open(name, attributes) {
      if (name === 'sheet') listed.push({ name: attributes.name ?? '', rId: relationshipId(attributes) });
      else if (name === 'workbookPr') date1904 = attributes.date1904 === '1' || attributes.date1904 === 'true';
    },
    close() {},
    text() {},
  });

  const sheets = listed.map(({ name, rId }, i): SheetInfo => {
    const rel = rels.get(rId);
    // Without relationships, fall back on the usual naming, as Excel itself would write it.
    const part = rel ? rel.target : rels.size === 0 ? `${base}worksheets/sheet${i + 1}.xml` : null;
    const kind = !rel || rel.type.endsWith('/worksheet') ? 'worksheet' : rel.type.endsWith('/chartsheet') ? 'chartsheet' : 'other';
    return { name, position: i + 1, part: part && archive.has(part) ? part : null, kind };
  });
  const byType = (suffix: string, fallback: string) => {
    const target = [...rels.values()].find((r) => r.type.endsWith(suffix))?.target ?? fallback;
    return archive.has(target) ? target : null;
  };
  return { sheets, sharedStringsPart: byType('/sharedStrings', `${base}sharedStrings.xml`), stylesPart: byType('/styles', `${base}styles.xml`), date1904 };
}

/** `r:id`, whatever prefix the writer bound the relationships namespace to. */
function relationshipId(attributes: Record<string, string>): string {
  for (const key in attributes) if (key === 'id' || key.endsWith(':id')) return attributes[key]!;
  return '';
}

/** A .rels part: Id → type and target, targets resolved to part names (no leading slash). */
async function readRelationships(archive: WorkbookArchive, part: string, base: string): Promise<Map<string, Relationship>> {
  const rels = new Map<string, Relationship>();
  await readXml(archive.file, part, archive.text(part), {
    open(name, a) {
      if (name !== 'Relationship' || a.TargetMode === 'External' || !a.Id || !a.Target) return;
      // Targets are URIs: a sheet file named 'Sheet 1.xml' is written 'Sheet%201.xml'.
      const uri = decodeTarget(a.Target);
      const target = uri.startsWith('/') ? uri.slice(1) : posix.normalize(posix.join(base, uri));
      rels.set(a.Id, { type: a.Type ?? '', target });
    },
    close() {},
    text() {},
  });
  return rels;
}

function decodeTarget(target: string): string {
  try {
    return decodeURIComponent(target);
  } catch {
    return target;
  }
}
