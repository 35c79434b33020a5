import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sourceConfigSchema, type SourceConfigInput } from '../../src/sources/config.js';
import { mappingConfigSchema, type MappingConfigInput } from '../../src/mapping/config.js';
import { readExportFile } from '../../src/sources/read.js';

/** A fresh temp dir for one test. */
export async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'dc-sources-'));
}

export const simpleMapping: MappingConfigInput = {
  fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code' },
};

/** Write `content` to a temp file and read it through the given (input-shaped) configs. */
export async function readText(
  content: string | Uint8Array,
  source: Partial<SourceConfigInput> = {},
  mapping: MappingConfigInput = simpleMapping,
  name = 'export.csv',
) {
  const dir = await tempDir();
  const file = join(dir, name);
  await writeFile(file, content);
  return readExportFile(file, sourceConfigSchema.parse({ type: 'csv', ...source }), mappingConfigSchema.parse(mapping));
}

/** A line that must never reach a log: the content of a file outside a watch folder (issue 11). */
export const SECRET = 'root:x:0:0:SECRET-7f3a9c1e-do-not-log:/root:/bin/bash';

/** A temp folder with an `inbox` (a watch folder) and, beside it, `outside/passwd` holding SECRET. */
export async function secretOutside(): Promise<{ base: string; inbox: string; outside: string; secret: string }> {
  const base = await tempDir();
  const inbox = join(base, 'inbox');
  const outside = join(base, 'outside');
  await mkdir(inbox);
  await mkdir(outside);
  const secret = join(outside, 'passwd');
  await writeFile(secret, `${SECRET}\n`);
  return { base, inbox, outside, secret };
}
