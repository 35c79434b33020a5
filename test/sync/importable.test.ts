import { describe, expect, it } from 'vitest';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { importability, type ImportFacts } from '../../src/sync/core/importable.js';

const PLAIN = { record_id: 'SKU', display_name: 'Name', api_value: 'Code' };

/** Facts of a clean three-row CSV; each case overrides a part. */
function facts(o: { source?: Record<string, unknown>; fields?: Record<string, unknown>; filters?: Record<string, unknown> } & Partial<Omit<ImportFacts, 'source' | 'mapping'>> = {}): ImportFacts {
  const { source, fields, filters, ...rest } = o;
  return {
    source: sourceConfigSchema.parse({ type: 'csv', ...source }),
    mapping: mappingConfigSchema.parse({ fields: fields ?? PLAIN, ...(filters ? { filters } : {}) }),
    encoding: (source?.encoding as string | undefined) ?? 'utf-8',
    rows: 3,
    records: 3,
    rowErrors: 0,
    oneLineEach: true,
    rawHeader: ['SKU', 'Name', 'Code', 'Stock', 'Aliases'],
    header: ['SKU', 'Name', 'Code', 'Stock', 'Aliases'],
    emptyAttributes: false,
    aliasesMerged: false,
    compression: null,
    ...rest,
  };
}

const cases: Array<{ name: string; f: ImportFacts; reason?: RegExp; encoding?: string; mapping?: Record<string, string> }> = [
  { name: 'plain column picks of a clean UTF-8 CSV', f: facts(), encoding: 'utf-8', mapping: PLAIN },
  {
    name: 'aliases and attributes by column, object form without transforms',
    f: facts({ fields: { ...PLAIN, aliases: { column: 'Aliases' }, 'attributes.stock': 'Stock' } }),
    mapping: { ...PLAIN, aliases: 'Aliases', 'attributes.stock': 'Stock' },
  },
  { name: 'shift_jis is sent as cp932 (our reader reads it so)', f: facts({ source: { encoding: 'shift_jis' } }), encoding: 'cp932' },
  { name: 'euc-kr', f: facts({ source: { encoding: 'euc-kr' } }), encoding: 'euc-kr' },
  { name: 'auto resolved to utf-8', f: facts({ source: { encoding: 'auto' }, encoding: 'utf-8' }), encoding: 'utf-8' },
  { name: 'XLSX', f: facts({ source: { type: 'xlsx' } }), reason: /XLSX/ },
  { name: 'semicolon delimiter', f: facts({ source: { delimiter: ';' } }), reason: /delimiter/ },
  { name: 'other quote', f: facts({ source: { quote: "'" } }), reason: /quote/ },
  { name: 'preamble lines', f: facts({ source: { header: { skip_lines: 2 } } }), reason: /first line/ },
  { name: 'header found by match', f: facts({ source: { header: { match: 'SKU' } } }), reason: /first line/ },
  { name: 'utf-16 configured', f: facts({ source: { encoding: 'utf-16le' } }), reason: /utf-16le/ },
  { name: 'auto resolved to utf-16 by a BOM', f: facts({ source: { encoding: 'auto' }, encoding: 'utf-16be' }), reason: /utf-16be/ },
  { name: 'a transform', f: facts({ fields: { ...PLAIN, display_name: { column: 'Name', transforms: ['trim'] } } }), reason: /display_name is not a plain column pick/ },
  { name: 'a constant', f: facts({ fields: { ...PLAIN, api_value: { const: 'x' } } }), reason: /api_value is not a plain/ },
  { name: 'a template', f: facts({ fields: { ...PLAIN, display_name: { template: '{Name} {Code}' } } }), reason: /display_name is not a plain/ },
  { name: 'a column by position', f: facts({ fields: { ...PLAIN, record_id: { column_index: 1 } } }), reason: /record_id is not a plain/ },
  { name: 'several columns joined', f: facts({ fields: { ...PLAIN, record_id: { columns: ['SKU', 'Code'] } } }), reason: /record_id is not a plain/ },
  { name: 'active (our reader takes y/n, A14 does not)', f: facts({ fields: { ...PLAIN, active: 'Stock' } }), reason: /field active/ },
  { name: 'ragged rows allowed (the server may read a short row otherwise)', f: facts({ source: { ragged_rows: 'allow' } }), reason: /ragged_rows/ },
  { name: 'a row filter', f: facts({ filters: { skip_when_empty: ['Code'] } }), reason: /filters rows/ },
  { name: 'row errors (skip_rows left some out)', f: facts({ rowErrors: 1, records: 2, oneLineEach: false }), reason: /1 row errors/ },
  { name: 'rows that made no record', f: facts({ records: 2 }), reason: /did not become records/ },
  { name: 'a blank line between rows', f: facts({ oneLineEach: false }), reason: /blank lines or line breaks/ },
  { name: 'header not on line 1', f: facts({ oneLineEach: false }), reason: /blank lines or line breaks/ },
  { name: 'header line unreadable', f: facts({ rawHeader: null }), reason: /could not be read/ },
  { name: 'annotated header cleaned by us', f: facts({ rawHeader: ['SKU*', 'Name', 'Code'], header: ['SKU', 'Name', 'Code'] }), reason: /record_id \("SKU"\)/ },
  { name: 'mapped name appears earlier in the raw header', f: facts({ rawHeader: ['Name', 'SKU', 'Name', 'Code'], header: ['Name*', 'SKU', 'Name', 'Code'] }), reason: /display_name/ },
  { name: 'a gzip export', f: facts({ compression: 'gzip' }), reason: /compressed \(gzip\)/ },
  { name: 'a zip export', f: facts({ compression: 'zip' }), reason: /compressed \(zip\)/ },
  { name: 'an alias listed twice in a row (kept once by us)', f: facts({ fields: { ...PLAIN, aliases: 'Aliases' }, aliasesMerged: true }), reason: /alias twice/ },
  { name: 'empty_is_null (null where the upload leaves the cell out)', f: facts({ fields: { ...PLAIN, 'attributes.stock': { column: 'Stock', empty_is_null: true } } }), reason: /attributes.stock is not a plain/ },
  { name: 'a boolean from conditions', f: facts({ fields: { ...PLAIN, 'attributes.on': { all: [{ column: 'Stock', empty: false }] } } }), reason: /attributes.on is not a plain/ },
  { name: 'empty attribute cells', f: facts({ fields: { ...PLAIN, 'attributes.stock': 'Stock' }, emptyAttributes: true }), reason: /attribute cells are empty/ },
];

describe('importability (pure)', () => {
  for (const c of cases) {
    it(c.name, () => {
      const v = importability(c.f);
      if (c.reason) {
        expect(v.importable).toBe(false);
        expect(v.importable === false && v.reason).toMatch(c.reason);
      } else {
        expect(v.importable).toBe(true);
        if (!v.importable) return;
        if (c.encoding) expect(v.fields.encoding).toBe(c.encoding);
        expect(v.fields.mapping).toEqual(c.mapping ?? PLAIN);
      }
    });
  }
});
