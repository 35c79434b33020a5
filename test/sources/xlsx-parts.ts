import { crc32, deflateRawSync } from 'node:zlib';

export interface ZipInput {
  name: string;
  data: Buffer;
  /** 8 = deflate (default), 0 = stored. */
  method?: 0 | 8;
  /** Uncompressed size to declare, when it should lie. */
  declaredBytes?: number;
  /** Bytes stored (deflated first when method 8) instead of `data`, whose CRC-32 and size are still declared: a damaged entry. */
  written?: Buffer;
}

/** A minimal zip writer, for archives exceljs would not write (bombs, liars, hand-made parts). */
export function makeZip(entries: ZipInput[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const method = e.method ?? 8;
    const name = Buffer.from(e.name);
    const body = e.written ?? e.data;
    const comp = method === 8 ? deflateRawSync(body) : body;
    const declared = e.declaredBytes ?? e.data.length;
    const crc = crc32(e.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(comp.length, 18);
    local.writeUInt32LE(declared, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(comp.length, 20);
    central.writeUInt32LE(declared, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, comp);
    centrals.push(central, name);
    offset += local.length + name.length + comp.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

const NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

export interface HandMadeSheet {
  name: string;
  /** The `<sheetData>` contents. */
  rows?: string;
  /** The whole part, instead of `rows`. */
  xml?: string;
  kind?: 'worksheet' | 'chartsheet';
}

/**
 * The parts of an XLSX workbook written by hand, in the order Excel writes
 * them (sheets before the strings table). `prefix` writes every element with
 * a namespace prefix, as the Open XML SDK may.
 */
export function handMadeXlsx(opts: HandMadeBook): Buffer {
  return makeZip(handMadeEntries(opts));
}

/** What handMadeXlsx writes. */
export interface HandMadeBook {
  sheets: HandMadeSheet[];
  sharedStrings?: string[] | string;
  styles?: string;
  date1904?: boolean;
  prefix?: string;
}

/** The archive entries of handMadeXlsx, for a test to damage one before makeZip. */
export function handMadeEntries(opts: HandMadeBook): ZipInput[] {
  const p = opts.prefix ? `${opts.prefix}:` : '';
  const xmlns = opts.prefix ? `xmlns:${opts.prefix}="${NS}"` : `xmlns="${NS}"`;
  const entries: ZipInput[] = [];
  const add = (name: string, text: string) => entries.push({ name, data: Buffer.from(text) });
  add('[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>');
  add('_rels/.rels', `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>`);
  const rels = opts.sheets.map((s, i) => `<Relationship Id="rId${i + 1}" Type="${REL}/${s.kind ?? 'worksheet'}" Target="${s.kind === 'chartsheet' ? 'chartsheets' : 'worksheets'}/sheet${i + 1}.xml"/>`);
  rels.push(`<Relationship Id="rIdS" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/>`, `<Relationship Id="rIdT" Type="${REL}/styles" Target="/xl/styles.xml"/>`);
  add('xl/_rels/workbook.xml.rels', `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels.join('')}</Relationships>`);
  const sheetList = opts.sheets.map((s, i) => `<${p}sheet name="${s.name}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('');
  add(
    'xl/workbook.xml',
    `<?xml version="1.0" encoding="UTF-8"?><${p}workbook ${xmlns} xmlns:r="${REL}">${opts.date1904 ? `<${p}workbookPr date1904="1"/>` : ''}<${p}sheets>${sheetList}</${p}sheets></${p}workbook>`,
  );
  opts.sheets.forEach((s, i) => {
    const xml = s.xml ?? `<?xml version="1.0" encoding="UTF-8"?><${p}worksheet ${xmlns}><${p}sheetData>${s.rows ?? ''}</${p}sheetData></${p}worksheet>`;
    add(`xl/${s.kind === 'chartsheet' ? 'chartsheets' : 'worksheets'}/sheet${i + 1}.xml`, xml);
  });
  if (opts.sharedStrings !== undefined) {
    const items = typeof opts.sharedStrings === 'string' ? opts.sharedStrings : opts.sharedStrings.map((t) => `<${p}si><${p}t xml:space="preserve">${t}</${p}t></${p}si>`).join('');
    add('xl/sharedStrings.xml', `<?xml version="1.0" encoding="UTF-8"?><${p}sst ${xmlns}>${items}</${p}sst>`);
  }
  add('xl/styles.xml', `<?xml version="1.0" encoding="UTF-8"?><${p}styleSheet ${xmlns}>${opts.styles ?? `<${p}cellXfs count="1"><${p}xf numFmtId="0"/></${p}cellXfs>`}</${p}styleSheet>`);
  return entries;
}
