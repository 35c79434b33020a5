import type { WorkbookArchive } from './archive.js';
import { readXml } from './xml.js';

/**
 * Built-in number formats that show dates or times: 14–22 and 45–47 in
 * every locale, 27–36 and 50–58 in the Chinese, Japanese and Korean ones
 * (年月日, 時分秒, era years), 71–81 in the Thai one; a workbook uses them
 * without defining them (ECMA-376 Part 1, 18.8.30).
 */
const BUILT_IN_DATE_FORMATS = new Set([
  14, 15, 16, 17, 18, 19, 20, 21, 22, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 45, 46, 47, 50, 51, 52, 53, 54, 55, 56, 57, 58, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81,
]);

/**
 * Whether a format code shows a date or time: one of exceljs's date letters
 * (y m d h M s b), or the era letters e and g, outside quoted text,
 * [colour]/[$-411] blocks and escapes. Case matters as it did in exceljs,
 * so that unquoted words some writers leave in (`#,##0 Stk.`) stay numbers.
 */
export function isDateFormat(code: string): boolean {
  const tokens = code
    .replace(/"[^"]*"/g, '') // quoted text
    .replace(/\\./g, '') // an escaped character
    .replace(/[_*]./g, '') // space as wide as a character, a fill character
    .replace(/\[(?:h+|m+|s+)\]/gi, 'h') // elapsed time
    .replace(/\[[^\]]*\]/g, '') // colour, condition, locale
    .replace(/General/gi, '')
    .replace(/e[+-]/gi, ''); // scientific notation
  return /[ymdhMsbeg]/.test(tokens);
}

/**
 * For each cell format (`s` attribute of a cell, an index into cellXfs),
 * whether its number format shows a date: those cells' numbers are serial dates.
 */
export async function readDateStyles(archive: WorkbookArchive, part: string): Promise<boolean[]> {
  const custom = new Map<number, string>();
  const dateXf: boolean[] = [];
  let inCellXfs = false;
  await readXml(archive.file, part, archive.text(part), {
    open(name, a) {
      if (name === 'numFmt') custom.set(Number(a.numFmtId), a.formatCode ?? '');
      else if (name === 'cellXfs') inCellXfs = true;
      else if (name === 'xf' && inCellXfs) {
        const id = Number(a.numFmtId ?? 0);
        const code = custom.get(id);
        dateXf.push(code !== undefined ? isDateFormat(code) : BUILT_IN_DATE_FORMATS.has(id));
      }
    },
    close(name) {
      if (name === 'cellXfs') inCellXfs = false;
    },
    text() {},
  });
  return dateXf;
}
