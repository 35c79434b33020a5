import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import iconv from 'iconv-lite';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { readExportFile } from '../../src/sources/read.js';
import { ConnectorError } from '../../src/errors.js';
import { sampleExport } from '../../src/cli/init/sample.js';
import { buildInit } from '../../src/cli/init/build.js';
import { guessEncoding } from '../../src/cli/init/encoding.js';
import { runCli } from '../cli/run-cli.js';
import { tempDir } from '../sources/helpers.js';

// Issue 16: `init` on every golden fixture folder. Encoding, delimiter and header must be right on every
// file init can read; the config must pass validate; and it must read the file without row errors
// wherever the file has none (its golden read has no row errors, or was refused only for its own config).
const root = fileURLToPath(new URL('../fixtures/', import.meta.url));
const cases = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'source.yaml')))
  .map((d) => d.name)
  .sort();

/** Files init cannot propose for, and what it says instead. */
const UNREADABLE: Record<string, string> = {
  'empty-file': 'EMPTY_FILE',
  'blank-lines-only': 'INIT_NOTHING_TO_PROPOSE',
  'xlsx-given-as-csv': 'WRONG_FORMAT',
};
/** Where the fixture's own config is deliberately wrong about the file. */
const TRUE_ENCODING: Record<string, string> = { 'wrong-encoding-cp932-as-utf8': 'cp932' };
/** Refusals that come from the fixture's config, not from the file. */
const CONFIG_REFUSALS = new Set(['COLUMN_NOT_FOUND', 'DUPLICATE_HEADER', 'AMBIGUOUS_COLUMN', 'LIMIT_ROWS', 'LIMIT_RECORD_BYTES', 'HEADER_NOT_FOUND']);

const normalEncoding = (e: string, file: Buffer) => (e === 'shift_jis' ? 'cp932' : e === 'auto' ? (file[0] === 0xff ? 'utf-16le' : file[0] === 0xfe ? 'utf-16be' : 'utf-8') : e);

describe('init on the golden fixtures', () => {
  it.each(cases)('%s', async (name) => {
    const dir = join(root, name);
    const input = join(dir, existsSync(join(dir, 'input.xlsx')) ? 'input.xlsx' : 'input.csv');
    const golden = JSON.parse(await readFile(join(dir, 'expected.json'), 'utf8')) as { header: string[]; row_errors: unknown[]; rejected: { code: string } | null };
    const fixture = sourceConfigSchema.parse((parseYaml(await readFile(join(dir, 'source.yaml'), 'utf8')) as { source: unknown }).source);

    if (UNREADABLE[name]) {
      const err = await sampleExport(input).then((s) => buildInit(input, s, { dataset: 'shop-1' })).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectorError);
      expect((err as ConnectorError).code).toBe(UNREADABLE[name]);
      return;
    }
    const { yaml } = buildInit(input, await sampleExport(input), { dataset: 'shop-1' });

    // It validates, as `validate` reads it.
    const tmp = await tempDir();
    await writeFile(join(tmp, 'connector.yaml'), yaml);
    const config = await loadConfig(join(tmp, 'connector.yaml'));
    const ds = config.datasets['shop-1']!;

    // Encoding, delimiter, sheet right.
    expect(ds.source.type).toBe(fixture.type);
    if (fixture.type === 'csv') {
      expect(ds.source.encoding).toBe(TRUE_ENCODING[name] ?? normalEncoding(fixture.encoding, await readFile(input)));
      expect(ds.source.delimiter === 'tab' ? '\t' : ds.source.delimiter).toBe(fixture.delimiter === 'tab' ? '\t' : fixture.delimiter);
    } else {
      expect(ds.source.sheet).toBe(fixture.sheet);
    }

    // The header right: reading with init's config finds the header the golden read found.
    const read = await readExportFile(input, ds.source, ds.mapping);
    if (golden.header.length > 0) expect(read.header).toEqual(golden.header);

    // No row errors where the file has none.
    const fileIsClean = golden.row_errors.length === 0 && (golden.rejected === null || CONFIG_REFUSALS.has(golden.rejected.code));
    if (fileIsClean) {
      expect(read.row_errors).toEqual([]);
      expect(read.rejected).toBeNull();
    }
  });
});

describe('init', () => {
  it('prints a config that `validate` accepts on stdout, and a preview of the first records with it on stderr', async () => {
    const input = join(root, 'cp932-japanese', 'input.csv');
    const r = await runCli(['init', '--file', input, '--dataset', 'shop-9']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^# Proposed by `dataset-connector init`/);
    expect(r.stdout).toMatch(/# not valid UTF-8; only cp932 decodes it without errors .*certainty: high\n\s+encoding: cp932/);
    expect(r.stdout).toMatch(/line 1: "VERSION \| 3"/);
    expect(r.stdout).not.toContain('preview of');
    expect(r.stderr).toContain('preview of');
    expect(r.stderr).toMatch(/4\s+J-1\s+髙島屋の①番/);
    expect(r.stderr).toContain('verdict: the file would be used');
    const dir = await tempDir();
    await writeFile(join(dir, 'connector.yaml'), r.stdout);
    const v = await runCli(['--config', join(dir, 'connector.yaml'), 'validate']);
    expect(v.stdout).toContain('configuration OK: 1 dataset (shop-9)');
    expect(v.code).toBe(0);
  });

  it('reads a .csv.gz and a zip of one CSV as the connector will, and says so', async () => {
    const dir = await tempDir();
    const gz = join(dir, 'items.csv.gz');
    await writeFile(gz, gzipSync(iconv.encode('商品コード,商品名,在庫\r\nJ-1,りんご,5\r\nJ-2,みかん,3\r\n', 'cp932')));
    const { yaml } = buildInit(gz, await sampleExport(gz), { dataset: 'shop-1' });
    expect(yaml).toContain('gzip-compressed');
    expect(yaml).toMatch(/encoding: cp932/);
    expect(yaml).toMatch(/attributes\.stock: \{ column: "在庫", transforms: \[integer\] \}/);
  });

  it('never guesses an encoding silently: an ambiguous one is marked CHECK with what else it could be', async () => {
    const g = guessEncoding(iconv.encode('区分,名称\n1,東京本店\n2,大阪支店\n', 'euc-jp'), true);
    expect(g.encoding).toBe('euc-jp');
    expect(['low', 'medium']).toContain(g.certainty);
    expect(g.alternatives.length).toBeGreaterThan(0);
    const dir = await tempDir();
    const file = join(dir, 'x.csv');
    await writeFile(file, iconv.encode('区分,名称\n1,東京本店\n2,大阪支店\n', 'euc-jp'));
    const r = await runCli(['init', '--file', file]);
    expect(r.stdout).toMatch(/# CHECK: not valid UTF-8; .* all decode it without errors.*certainty: (low|medium); also decodes as/);
    expect(r.stderr).toMatch(/warning: encoding: euc-jp is a (low|medium)-certainty guess/);
  });

  it.each([
    ['cp932', '商品コード,商品名\nA,りんご\n'],
    ['euc-jp', '商品コード,商品名\nA,りんご\n'],
    ['euc-kr', 'SKU,이름\nK-1,김치찌개\nK-2,불고기\n'],
    ['cp932', 'id,name\n1,ｺｰﾋｰ\n2,ｶﾌｪｵﾚ\n'],
    ['euc-jp', 'id,name\n1,ｺｰﾋｰ\n2,ｶﾌｪｵﾚ\n'],
    ['utf-8', 'SKU,Name\nA,Crème brûlée\n'],
  ])('tells %s from the others: %j', (encoding, text) => {
    expect(guessEncoding(iconv.encode(text, encoding), true).encoding).toBe(encoding);
  });

  it('proposes Square\'s sellable as all of two conditions, and names a missing sheet', async () => {
    const input = join(root, 'utf16le-tab-square-jp', 'input.csv');
    const { yaml } = buildInit(input, await sampleExport(input), { dataset: 'shop-1' });
    expect(yaml).toContain('active: { all: [{ column: "販売可能", one_of: ["Y"] }, { column: "アーカイブ済み", one_of: ["N"] }] }');
    const xlsx = join(root, 'xlsx-title-rows', 'input.xlsx');
    const r = await runCli(['init', '--file', xlsx, '--sheet', 'Items']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no worksheet "Items"; worksheets are: "README", "商品一覧"');
  });
});

describe('init comments agree with the values they explain (review of issue 16)', () => {
  it('the number of preamble lines named above skip_lines is skip_lines, for every fixture', async () => {
    const inputs = readdirSync(root)
      .map((d) => ['input.csv', 'input.xlsx', 'input.tsv', 'input.txt'].map((f) => join(root, d, f)).find((p) => existsSync(p)))
      .filter((p): p is string => p !== undefined);
    expect(inputs.length).toBeGreaterThan(10);
    let checked = 0;
    for (const input of inputs) {
      const sample = await sampleExport(input).catch(() => null);
      if (sample === null) continue;
      let yaml: string;
      try {
        yaml = buildInit(input, sample, { dataset: 'shop-1' }).yaml;
      } catch {
        continue;
      }
      const skip = Number(/skip_lines: (\d+)/.exec(yaml)?.[1]);
      const said = /the (\d+) lines? above (?:is|are) preamble/.exec(yaml);
      expect([input, said === null ? 0 : Number(said[1])]).toEqual([input, skip]);
      expect([input, yaml]).not.toEqual([input, expect.stringContaining('one column')]);
      checked++;
    }
    expect(checked).toBeGreaterThan(10);
  });
});
