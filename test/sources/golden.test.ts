import { describe, expect, it } from 'vitest';
import { readdirSync, existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { readExportFile } from '../../src/sources/read.js';

// Golden folders (house style 9): test/fixtures/<case>/{source.yaml, input.csv, expected.json}.
// UPDATE_GOLDEN=1 rewrites expected.json; review the diff before committing it.
const root = fileURLToPath(new URL('../fixtures/', import.meta.url));
const cases = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'source.yaml')))
  .map((d) => d.name)
  .sort();

describe('golden fixtures', () => {
  it('has fixture folders', () => expect(cases.length).toBeGreaterThan(20));

  it.each(cases)('%s', async (name) => {
    const dir = join(root, name);
    const cfg = parseYaml(await readFile(join(dir, 'source.yaml'), 'utf8')) as { source: unknown; mapping: unknown };
    const input = join(dir, existsSync(join(dir, 'input.xlsx')) ? 'input.xlsx' : 'input.csv');
    const inputName = input.slice(dir.length + 1);
    const r = await readExportFile(input, sourceConfigSchema.parse(cfg.source), mappingConfigSchema.parse(cfg.mapping));
    const actual = {
      records: r.records,
      lines: r.lines,
      header: r.header,
      counts: r.counts,
      row_errors: r.row_errors.map((e) => ({ ...e, file: e.file === input ? inputName : e.file })),
      rejected: r.rejected && { code: r.rejected.code, action: r.rejected.action, line: r.rejected.context.line ?? null, message: r.rejected.message.replace(input, inputName) },
    };
    const expectedPath = join(dir, 'expected.json');
    if (process.env.UPDATE_GOLDEN === '1') await writeFile(expectedPath, `${JSON.stringify(actual, null, 2)}\n`);
    expect(actual).toEqual(JSON.parse(await readFile(expectedPath, 'utf8')));
  });
});
