import { MAX_ATTRIBUTES } from '../../model/record.js';
import type { ColumnProfile } from './profile.js';

/** One proposed field of the mapping: its spec (as YAML will show it) and why. */
export interface FieldProposal {
  field: string;
  spec: unknown;
  why: string;
}

export interface MappingProposal {
  fields: FieldProposal[];
  /** filters.skip_when_empty, when the key column is empty in some rows (continuation rows), with why. */
  skipWhenEmpty: { ref: ColumnProfile['ref']; why: string } | null;
  /** Columns left out, with why (shown as comments). */
  leftOut: string[];
}

// A product's own code first (SKU, internal reference), then generic ids and tokens.
const CODE_HINT = /(^|[^a-z])(sku|code|reference|default_code|handle|barcode|jan|gtin|ean|upc|item ?no|品番|コード|商品番号|código|codigo|referencia)([^a-z]|$)/i;
const ID_HINT = /(^|[^a-z])(id|token|トークン|商品id|商品ＩＤ|番号)([^a-z]|$)/i;
const NAME_HINT = /(name|title|item|product|description|品名|商品名|名称|名前|nombre|artículo|articulo|producto)/i;
const ACTIVE_HINT = /(active|enabled|visible|sellable|available|published|status|表示|公開|有効|販売|disponible|activo)/i;
const NEGATIVE_HINT = /(archived|deleted|hidden|disabled|inactive|削除|非表示|停止|アーカイブ|archivado)/i;
const ALIAS_HINT = /(alias|別名|keyword|キーワード|よみ|読み|カナ|kana|furigana)/i;

/** Japanese and Spanish header words that have a usual attribute key (keys must be A-Z a-z 0-9 _). */
const KEY_WORDS: Array<[RegExp, string]> = [
  [/在庫|stock|existencias|inventario/i, 'stock'],
  [/原価|cost|coste|costo/i, 'cost'],
  [/価格|売価|単価|定価|金額|price|precio/i, 'price'],
  [/税/i, 'tax'],
  [/カテゴリ|分類|部門|category|categoría|categoria/i, 'category'],
  [/メーカー|ブランド|maker|brand|marca/i, 'maker'],
  [/サイズ|size|talla/i, 'size'],
  [/色|カラー|colou?r/i, 'colour'],
  [/単位|unit|unidad/i, 'unit'],
  [/備考|メモ|note|nota/i, 'note'],
  [/更新|updated|modified/i, 'updated'],
  [/登録|created/i, 'created'],
  [/発売|release/i, 'released'],
  [/JAN|GTIN|EAN|barcode|バーコード/i, 'barcode'],
  [/トークン|token/i, 'token'],
  [/バリエーション|variation|variante/i, 'variation'],
  [/商品名|品名|名称|名前/i, 'name'],
  [/品番|コード|code/i, 'code'],
];

/** A valid attribute key for a header (A6: 1–64 of A-Z a-z 0-9 _), unique among `taken`. */
export function attributeKey(header: string, index: number, taken: Set<string>): string {
  let key = header
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  if (key === '' || !/[a-z]/.test(key)) key = KEY_WORDS.find(([re]) => re.test(header))?.[1] ?? `column_${index + 1}`;
  let unique = key;
  for (let n = 2; taken.has(unique); n++) unique = `${key.slice(0, 60)}_${n}`;
  taken.add(unique);
  return unique;
}

const col = (p: ColumnProfile) => p.ref;
const withTransforms = (p: ColumnProfile, transforms = p.transforms) => {
  const ref = col(p);
  if (typeof ref !== 'string') return transforms.length === 0 ? ref : { ...ref, transforms };
  return transforms.length === 0 ? ref : { column: ref, transforms };
};
const pick = (p: ColumnProfile) => (typeof p.ref === 'string' ? { column: p.ref } : p.ref);

/** The boolean transform of a yes/no column. An empty cell has no meaning of its own (issue 11), so when empties were seen they are read as false, the side that publishes nothing by accident, and the comment says so. */
function booleanSpec(p: ColumnProfile): { spec: unknown; note: string } {
  const falseWords = p.empty > 0 ? [...p.falseWords!, ''] : p.falseWords!;
  const note = p.empty > 0 ? `; ${p.empty} empty cells seen, read as false here (Odoo writes false so): CHECK, or move "" to true_words` : '';
  return { spec: { ...pick(p), transforms: [{ boolean: { true_words: p.trueWords!, false_words: falseWords } }] }, note };
}

/**
 * When no column is a filled, unique key, a column that is unique where it
 * is filled (Shopify's Variant SKU, empty on image-only rows) can be the key
 * of the rows that have it.
 */
export function keyWithGaps(columns: ColumnProfile[]): ColumnProfile | null {
  if (columns.some((c) => c.idLike && c.unique && c.empty === 0)) return null;
  const gappy = columns.filter((c) => c.idLike && c.unique && c.empty > 0 && c.filled >= 2);
  const hinted = (c: ColumnProfile) => Number(CODE_HINT.test(c.name) || ID_HINT.test(c.name));
  return gappy.sort((a, b) => hinted(b) - hinted(a) || b.filled - a.filled)[0] ?? null;
}

/**
 * Propose the mapping from the columns' profiles: record_id from a column of
 * unique values that look like identifiers, display_name from a name-like
 * column, api_value from the record's code, active from a yes/no column
 * (or all of a positive and a negative one, Square's Sellable/Archived),
 * aliases from an alias-like column, and every other column an attribute.
 */
export function proposeMapping(columns: ColumnProfile[], keyWithGaps: ColumnProfile | null = null): MappingProposal {
  const used = new Set<number>();
  const fields: FieldProposal[] = [];
  const leftOut: string[] = [];
  const usable = columns.filter((c) => c.kind !== 'empty');

  const idCandidates = usable
    // Prices and other decimals are unique by chance, never keys.
    .filter((c) => c.idLike && c.unique && c.empty === 0 && c.kind !== 'number')
    .map((c) => ({ c, score: (CODE_HINT.test(c.name) ? 10 : ID_HINT.test(c.name) ? 6 : 0) + (c.kind === 'identifier' ? 2 : 0) - c.index * 0.1 }))
    .sort((a, b) => b.score - a.score);
  const id = keyWithGaps ? columns[keyWithGaps.index]! : (idCandidates[0]?.c ?? null);
  const skipWhenEmpty = keyWithGaps
    ? { ref: keyWithGaps.ref, why: `"${keyWithGaps.name}" is empty in ${keyWithGaps.empty} of the rows read (continuation or image rows of a product with variants): those rows are skipped, not errors; CHECK` }
    : null;
  if (id) {
    used.add(id.index);
    const others = idCandidates.slice(1, 3).map((x) => `"${x.c.name}"`);
    fields.push({
      field: 'record_id',
      spec: withTransforms(id),
      why: `"${id.name}": every value in the rows ${keyWithGaps ? 'kept' : 'read'} is filled, different and a valid record_id (${id.examples.join(', ')})${others.length ? `; also possible: ${others.join(', ')}` : ''}`,
    });
  } else {
    const first = usable[0] ?? columns[0]!;
    fields.push({
      field: 'record_id',
      spec: withTransforms(first),
      why: `CHECK: no column has a filled, different, valid identifier in every row read; "${first.name}" stands in — pick the key column, or several with columns: [A, B]`,
    });
  }

  const nameCol =
    usable.find((c) => !used.has(c.index) && c.kind === 'text' && NAME_HINT.test(c.name) && c.empty === 0) ??
    usable.filter((c) => !used.has(c.index) && c.kind === 'text' && c.empty === 0).sort((a, b) => b.distinct - a.distinct)[0] ??
    id ??
    columns[0]!;
  if (nameCol) {
    if (nameCol !== id) used.add(nameCol.index);
    fields.push({
      field: 'display_name',
      spec: withTransforms(nameCol, nameCol.kind === 'text' ? (nameCol.transforms.includes('trim') ? ['trim', 'collapse_spaces'] : ['collapse_spaces']) : nameCol.transforms),
      why: `"${nameCol.name}": ${NAME_HINT.test(nameCol.name) ? 'its header says it is a name' : `the filled text column with the most different values (${nameCol.distinct})`}`,
    });
  }

  const apiCol = id ?? nameCol;
  if (apiCol) fields.push({ field: 'api_value', spec: withTransforms(apiCol), why: `"${apiCol.name}": the value the agent passes on to tool calls; the record's own code is the usual choice` });

  const aliasCol = usable.find((c) => !used.has(c.index) && c.kind === 'text' && ALIAS_HINT.test(c.name));
  if (aliasCol) {
    used.add(aliasCol.index);
    fields.push({ field: 'aliases', spec: col(aliasCol), why: `"${aliasCol.name}": its header says it holds other names; several are separated by "|"` });
  }

  const booleans = usable.filter((c) => !used.has(c.index) && c.kind === 'boolean');
  const positive = booleans.find((c) => ACTIVE_HINT.test(c.name) && !NEGATIVE_HINT.test(c.name));
  const negative = booleans.find((c) => NEGATIVE_HINT.test(c.name));
  if (positive && negative) {
    used.add(positive.index);
    used.add(negative.index);
    fields.push({
      field: 'active',
      spec: { all: [{ column: col(positive), one_of: positive.trueWords! }, { column: col(negative), one_of: [...negative.falseWords!, ...(negative.empty > 0 ? [''] : [])] }] },
      why: `"${positive.name}" is ${positive.trueWords!.join('/')} and "${negative.name}" is ${negative.falseWords!.join('/')}${negative.empty > 0 ? ' or empty' : ''}; any other value makes the record inactive`,
    });
  } else if (positive ?? negative) {
    const b = (positive ?? negative)!;
    used.add(b.index);
    if (b === negative) {
      fields.push({ field: 'active', spec: { ...pick(b), transforms: [{ boolean: { true_words: b.falseWords!, false_words: [...b.trueWords!, ...(b.empty > 0 ? [''] : [])] } }] }, why: `"${b.name}" says the opposite of active: ${b.falseWords!.join('/')} is active${b.empty > 0 ? '; empty cells read as not active: CHECK' : ''}` });
    } else {
      const { spec, note } = booleanSpec(b);
      fields.push({ field: 'active', spec, why: `"${b.name}": ${b.seen}${note}` });
    }
  }

  const taken = new Set<string>();
  let attributes = 0;
  for (const c of columns) {
    if (used.has(c.index)) continue;
    if (c.kind === 'empty') {
      leftOut.push(`"${c.name}": ${c.seen}`);
      continue;
    }
    if (attributes >= MAX_ATTRIBUTES) {
      leftOut.push(`"${c.name}": a record has at most ${MAX_ATTRIBUTES} attributes (A6)`);
      continue;
    }
    const key = attributeKey(c.name, c.index, taken);
    attributes++;
    if (c.kind === 'boolean') {
      const { spec, note } = booleanSpec(c);
      fields.push({ field: `attributes.${key}`, spec, why: `"${c.name}": ${c.seen}${note}` });
    } else {
      fields.push({ field: `attributes.${key}`, spec: withTransforms(c), why: `"${c.name}": ${c.seen}` });
    }
  }
  return { fields, leftOut, skipWhenEmpty };
}
