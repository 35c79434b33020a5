// The exports the bench reads, written on the fly, and the mappings it reads them with.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/** 7 fields, 12 transforms: template, split, number, integer, null_words, boolean words, … */
export const MAPPING = {
  fields: {
    record_id: { column: 'SKU', transforms: ['trim', 'strip_prefix'] },
    display_name: { template: '{Name} {Size}', transforms: ['collapse_spaces'] },
    api_value: { column: 'Code', transforms: ['lowercase'] },
    aliases: { column: 'Aliases', transforms: ['split'] },
    'attributes.price': { column: 'Price', transforms: ['number'] },
    'attributes.stock': { column: 'In stock [Main Street]', transforms: [{ null_words: ['not stocked'] }, 'integer'] },
    active: { column: 'Published', transforms: [{ boolean: { true_words: ['表示'], false_words: ['非表示'] } }] },
  },
};

/** The A14-style mapping: columns straight to fields, aliases split, two typed attributes. */
export const LIGHT_MAPPING = {
  fields: {
    record_id: 'SKU',
    display_name: 'Name',
    api_value: 'Code',
    aliases: 'Aliases',
    'attributes.price': { column: 'Price', transforms: ['number'] },
    'attributes.size': 'Size',
  },
};

/** Plain column picks only: the server can map the file itself, so a replace goes as an upload (A14). */
export const IMPORT_MAPPING = {
  fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', aliases: 'Aliases', 'attributes.size': 'Size' },
};

export const HEADER = ['SKU', 'Name', 'Size', 'Code', 'Aliases', 'Price', 'In stock [Main Street]', 'Published'];

/** Row `i` of the 8-column export. */
export function row(i) {
  return [
    `SKU-${i}`,
    `Product ${i % 977}`,
    ['S', 'M', 'L'][i % 3],
    `CODE${i}`,
    `p${i}|item ${i}`,
    `${(i % 5000) + 1}.${String(i % 100).padStart(2, '0')}`,
    i % 50 === 0 ? 'not stocked' : String((i % 300) - 20),
    i % 7 === 0 ? '非表示' : '表示',
  ];
}

/** Write `rows` lines of `make(i)` (i from 1) under `header` as CSV; cells must need no quoting. */
export async function writeRows(file, header, rows, make) {
  const out = createWriteStream(file);
  out.write(header.join(',') + '\n');
  let buf = '';
  for (let i = 1; i <= rows; i++) {
    buf += make(i).join(',') + '\n';
    if (buf.length > 1 << 16) {
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  out.end(buf);
  await once(out, 'finish');
}

/** The 8-column export of `rows` rows. */
export function writeCsv(file, rows) {
  return writeRows(file, HEADER, rows, row);
}

/** `japanese`: every product named differently in Japanese, as a Japanese shop's strings table holds them. */
export async function writeXlsx(file, rows, japanese = false) {
  const { default: ExcelJS } = await import('exceljs');
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: true });
  const ws = wb.addWorksheet('Stock');
  ws.addRow(HEADER).commit();
  for (let i = 1; i <= rows; i++) {
    const r = row(i);
    if (japanese) r[1] = `髙島屋の商品 ${i} 番 ①㈱`;
    ws.addRow([r[0], r[1], r[2], r[3], r[4], Number(r[5]), r[6] === 'not stocked' ? r[6] : Number(r[6]), r[7]]).commit();
  }
  ws.commit();
  await wb.commit();
}

// Square's item library export (CSV), 47 columns with Square's own names; two locations.
export const SQUARE_HEADER = [
  'Token', 'Item Name', 'Variation Name', 'Unit and Precision', 'SKU', 'Description', 'Category', 'Reporting Category',
  'SEO Title', 'SEO Description', 'Permalink', 'GTIN', 'Square Online Item Visibility', 'Item Type', 'Weight (lb)',
  'Social Media Link Title', 'Social Media Link Description', 'Shipping Enabled', 'Self-serve Ordering Enabled',
  'Delivery Enabled', 'Pickup Enabled', 'Price', 'Online Sale Price', 'Archived', 'Sellable', 'Contains Alcohol',
  'Stockable', 'Skip Detail Screen in POS', 'Option Name 1', 'Option Value 1', 'Option Name 2', 'Option Value 2',
  'Default Unit Cost', 'Default Vendor Name', 'Default Vendor Code',
  'Enabled [Main Street]', 'Current Quantity [Main Street]', 'New Quantity [Main Street]', 'Stock Alert Enabled [Main Street]',
  'Stock Alert Count [Main Street]', 'Price [Main Street]',
  'Enabled [Shibuya]', 'Current Quantity [Shibuya]', 'New Quantity [Shibuya]', 'Stock Alert Enabled [Shibuya]',
  'Stock Alert Count [Shibuya]', 'Tax - Sales Tax (10%)',
];

const TOKEN_CHARS = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
function token(i) {
  let s = '';
  let x = (i * 2654435761) >>> 0;
  for (let k = 0; k < 24; k++) {
    s += TOKEN_CHARS[(x + k * i) % TOKEN_CHARS.length];
    x = (x * 1103515245 + 12345) >>> 0;
  }
  return s;
}

/** Row `i` of the Square export; `stockBump` raises the Main Street stock of every 100th variation (1%). */
export function squareRow(i, stockBump = 0) {
  const size = ['Small', 'Medium', 'Large'][i % 3];
  const stock = (i * 37) % 250;
  return [
    token(i), `Tee ${Math.floor(i / 3)}`, size, '', `SQ${String(i).padStart(7, '0')}`,
    i % 10 === 0 ? `Soft cotton tee ${i}` : '', `Category ${i % 40}`, '',
    '', '', '', i % 20 === 0 ? String(4900000000000 + i) : '', 'visible', 'Physical good', '',
    '', '', 'N', 'N', 'N', 'Y', `${(i % 90) + 10}.00`, '', 'N', 'Y', 'N', 'Y', 'N',
    'Size', size, '', '', `${(i % 40) + 2}.50`, i % 2 ? `Vendor ${i % 12}` : '', i % 2 ? `V-${i % 997}` : '',
    'Y', String(stock + (i % 100 === 0 ? stockBump : 0)), '', 'N', '', '',
    'Y', String((i * 11) % 120), '', 'N', '', 'Y',
  ];
}

/** Square's export of `rows` variations. */
export function writeSquare(file, rows, stockBump = 0) {
  return writeRows(file, SQUARE_HEADER, rows, (i) => squareRow(i, stockBump));
}

/** How a shop maps Square's export: SKU as id, item and variation as the name, both locations' stock. */
export const SQUARE_MAPPING = {
  fields: {
    record_id: { column: 'SKU', transforms: ['trim'] },
    display_name: { template: '{Item Name} {Variation Name}', transforms: ['collapse_spaces'] },
    api_value: 'Token',
    'attributes.category': 'Category',
    'attributes.price': { column: 'Price', transforms: ['number'] },
    'attributes.stock_main_street': { column: 'Current Quantity [Main Street]', transforms: ['integer'] },
    'attributes.stock_shibuya': { column: 'Current Quantity [Shibuya]', transforms: ['integer'] },
    active: { column: 'Sellable', transforms: [{ boolean: { true_words: ['Y'], false_words: ['N'] } }] },
  },
};

/**
 * The export before `writeCsv`'s, as the diff bench's snapshot was published from it: every 100th record's
 * stock one higher (diff.bench.mjs --seed's snapshot), so that its rows can be kept (issue 18's unchanged rows).
 */
export function writePreviousCsv(file, rows) {
  return writeRows(file, HEADER, rows, (i) => {
    const r = row(i);
    if (i % 100 === 2) r[6] = String((r[6] === 'not stocked' ? 0 : Number(r[6])) + 1);
    return r;
  });
}
