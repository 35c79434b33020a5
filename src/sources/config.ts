import { z } from 'zod';
import { regexString } from '../mapping/config.js';

/** Encodings a CSV export may be in; `auto` only reads a byte order mark (else UTF-8), it never guesses. */
export const SOURCE_ENCODINGS = ['auto', 'utf-8', 'cp932', 'shift_jis', 'euc-jp', 'euc-kr', 'utf-16le', 'utf-16be'] as const;
export type SourceEncoding = (typeof SOURCE_ENCODINGS)[number];

const MIB = 1024 * 1024;

/** Header annotations removed by default: trailing `*`/`※` marks and "required" notes such as `(必須)` or `【必須】`. */
export const DEFAULT_HEADER_STRIP_PATTERNS = ['\\s*[*※]+$', '\\s*[（(](必須|required)[)）]$', '\\s*【必須】$'];

/** Lines before the header row and how header cells are cleaned. */
export const headerConfigSchema = z
  .strictObject({
    skip_lines: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('Physical lines (XLSX: rows) before the header to skip, e.g. a version line and a title.'),
    match: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe('Find the header as the first row having a cell (after cleaning) equal to this text; rows before it are preamble.'),
    search_rows: z.number().int().min(1).max(1000).default(20).describe('How many rows `match` looks through before giving up.'),
    strip_patterns: z
      .array(regexString)
      .default(DEFAULT_HEADER_STRIP_PATTERNS)
      .describe('Regular expressions removed from every header cell (annotations); quotes and outer spaces are always removed.'),
  })
  .describe('Where the header is and how its cells are cleaned.');

/** Safety limits of one read. */
export const limitsConfigSchema = z
  .strictObject({
    max_file_bytes: z.number().int().min(1).default(512 * MIB).describe('Largest export accepted, in bytes.'),
    max_rows: z.number().int().min(1).default(2_000_000).describe('Most data rows accepted (header and preamble not counted).'),
    max_record_bytes: z
      .number()
      .int()
      .min(64)
      .default(1 * MIB)
      .describe('Largest single row, in characters of text (guards against an unterminated quote eating the file).'),
    max_uncompressed_bytes: z
      .number()
      .int()
      .min(1)
      .default(1024 * MIB)
      .describe('XLSX, .csv.gz and zipped CSV: largest total uncompressed size, in bytes.'),
    max_compression_ratio: z
      .number()
      .min(1)
      .default(200)
      .describe('XLSX, .csv.gz and zipped CSV: largest uncompressed/compressed ratio of an entry over 1 MiB (zip bomb guard).'),
    max_shared_strings_bytes: z
      .number()
      .int()
      .min(1)
      .default(256 * MIB)
      .describe(
        'XLSX: largest shared strings table (xl/sharedStrings.xml, uncompressed), in bytes. The table is held in memory while the sheet is read: its text as UTF-8 (less than the part, which has markup) and about 5 bytes per item, 8 more per item once a cell repeats one (the repeated ones kept as strings); a million-row export has one of about 100 MB.',
      ),
  })
  .describe('Limits; a file beyond one is refused whole.');

/** Where a dataset's export comes from and how to read it (issue 3). */
export const sourceConfigSchema = z
  .strictObject({
    type: z.enum(['csv', 'xlsx']).describe('Format of the export file. A CSV may come as gzip (.csv.gz) or as the one file of a zip; that is told by content.'),
    encoding: z
      .enum(SOURCE_ENCODINGS)
      .default('utf-8')
      .describe('CSV text encoding. cp932 is Shift_JIS as Windows writes it (shift_jis is read the same way); auto reads a BOM, else UTF-8.'),
    delimiter: z
      .enum([',', ';', '\t', '|', 'tab'])
      .default(',')
      .describe('CSV field delimiter; `tab` is the same as "\\t".'),
    quote: z.string().length(1).default('"').describe('CSV quote character.'),
    ragged_rows: z
      .enum(['reject', 'allow'])
      .default('reject')
      .describe(
        'CSV rows with fewer cells than the header. reject: such a row is a row error (COLUMN_COUNT), because a cut or a lost delimiter would otherwise read its missing cells as empty; ' +
          'allow: missing trailing cells read as empty, for writers that leave them out. Either way a last line cut off without its line end and shorter than the header refuses the file (TRUNCATED). XLSX rows are never held to the header width (absent cells are empty).',
      ),
    sheet: z
      .union([z.string().min(1), z.number().int().min(1)])
      .nullable()
      .default(null)
      .describe('XLSX sheet by name, or by 1-based position in the workbook (hidden sheets count); null = the first worksheet.'),
    header: headerConfigSchema.default(() => headerConfigSchema.parse({})),
    limits: limitsConfigSchema.default(() => limitsConfigSchema.parse({})),
    on_row_errors: z
      .enum(['reject_file', 'skip_rows'])
      .default('reject_file')
      .describe('reject_file: any row error refuses the whole file; skip_rows: bad rows are left out, up to max_bad_row_ratio.'),
    max_bad_row_ratio: z
      .number()
      .min(0)
      .max(1)
      .default(0.01)
      .describe('skip_rows: largest share of bad rows among data rows before the file is refused anyway.'),
    max_row_errors_kept: z
      .number()
      .int()
      .min(1)
      .default(10_000)
      .describe('Most row errors kept for the report and reject file (all are counted).'),
  })
  .meta({ id: 'SourceConfig' })
  .describe('The export file: format, encoding, layout, limits and row error policy.');

export type SourceConfig = z.output<typeof sourceConfigSchema>;
/** Input shape (before defaults), handy for tests and examples. */
export type SourceConfigInput = z.input<typeof sourceConfigSchema>;
