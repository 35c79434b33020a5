import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** A fresh temp folder with the given files (path → text); returns the folder. */
export async function tempFiles(files: Record<string, string>, modes: Record<string, number> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dc-config-'));
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
    await chmod(path, modes[name] ?? 0o600);
  }
  return dir;
}

/** A dataset block that the schema accepts, indented for `datasets:` (4 spaces). */
export function datasetYaml(name: string, extra = ''): string {
  return [
    `  ${name}:`,
    '    api:',
    '      base_url: http://127.0.0.1:8787',
    `      key: { env: ${name.toUpperCase().replace(/-/g, '_')}_KEY }`,
    '    source:',
    '      type: csv',
    '    mapping:',
    '      fields:',
    '        record_id: SKU',
    '        display_name: Name',
    '        api_value: SKU',
    extra,
  ]
    .filter((l) => l !== '')
    .join('\n');
}
