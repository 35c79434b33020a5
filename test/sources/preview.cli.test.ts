import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { runCli } from '../cli/run-cli.js';
import { tempDir } from './helpers.js';

async function setup(csv: string, policy = 'reject_file') {
  const dir = await tempDir();
  const config = join(dir, 'connector.yaml');
  await writeFile(
    config,
    `state_dir: ${dir}/state
datasets:
  shop-1:
    api: { base_url: "http://127.0.0.1:9", key: { env: SHOP1_KEY } }
    source: { type: csv, on_row_errors: ${policy} }
    mapping:
      fields:
        record_id: SKU
        display_name: Name
        api_value: SKU
        attributes.stock: { column: Stock, transforms: [integer] }
`,
  );
  const file = join(dir, 'export.csv');
  await writeFile(file, csv);
  return { config, file };
}

describe('preview command', () => {
  it('prints a table of records, every row error with line and column, counts and the verdict; sends nothing', async () => {
    const { config, file } = await setup('SKU,Name,Stock\nA-1,髙島屋の①,5\nA-2,Pear,x\nA-3,Plum,-1\n');
    const r = await runCli(['--config', config, 'preview', '--dataset', 'shop-1', '--file', file]);
    expect(r.stdout).toMatch(/line\s+record_id\s+display_name/);
    expect(r.stdout).toContain('髙島屋の①');
    expect(r.stdout).toContain('A-3');
    expect(r.stdout).toMatch(/3\s+Stock\s+x\s+TRANSFORM_FAILED/);
    expect(r.stdout).toContain('rows 3, records 2, filtered 0, bad rows 1, row errors 1');
    expect(r.stdout).toContain('verdict: the file would be rejected [ROW_ERRORS]');
    expect(r.code).toBe(1);
  });

  it('--json prints every record and row error as JSON lines, then a summary', async () => {
    const { config, file } = await setup('SKU,Name,Stock\nA-1,Apple,5\nA-2,Pear,x\n', 'skip_rows');
    const r = await runCli(['--config', config, 'preview', '--dataset', 'shop-1', '--file', file, '--json']);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.type)).toEqual(['record', 'row_error', 'summary']);
    expect(lines[0]).toMatchObject({ line: 2, record: { record_id: 'A-1', attributes: { stock: 5 } } });
    expect(lines[1]).toMatchObject({ line: 3, column: 'Stock', code: 'TRANSFORM_FAILED' });
    // skip_rows with the default max_bad_row_ratio (0.01): 1 of 2 bad is too many
    expect(lines[2].rejected.code).toBe('ROW_ERRORS');
  });

  it('a file-level problem is one clear line', async () => {
    const { config, file } = await setup('SKU,Name,Stock\n');
    const r = await runCli(['--config', config, 'preview', '--dataset', 'shop-1', '--file', file]);
    expect(r.stdout).toContain('[HEADER_ONLY]');
    expect(r.code).toBe(1);
  });

  it('stops quietly when its reader stops (| head): no EPIPE stack trace, exit 0', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => `A-${i},Name ${i},${i}`).join('\n');
    const { config, file } = await setup(`SKU,Name,Stock\n${rows}\n`);
    const root = fileURLToPath(new URL('../..', import.meta.url));
    for (const args of [['--json'], ['--limit', '20000']]) {
      const child = spawn(process.execPath, ['dist/cli/main.js', '--config', config, 'preview', '--dataset', 'shop-1', '--file', file, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      // Like head -1: read the first line, then close the pipe.
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      child.stdout.destroy();
      const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
      expect(stderr).toBe('');
      expect(code).toBe(0);
    }
  });

  it('shows control characters from the data as escapes, never sends them to the terminal', async () => {
    const { config, file } = await setup('SKU,Name,Stock\nA-1,\u001b[31mr\u0007\u009b2J\u202eexe,5\nA-2,Pear\u001b]0;title\u0007,x\n');
    const r = await runCli(['--config', config, 'preview', '--dataset', 'shop-1', '--file', file]);
    expect(r.stdout).toContain('\\x1b[31mr\\x07\\x9b2J\\u202eexe');
    expect(r.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    const json = await runCli(['--config', config, 'preview', '--dataset', 'shop-1', '--file', file, '--json']);
    expect(json.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(JSON.parse(json.stdout.split('\n')[0]!).record.display_name).toBe('\u001b[31mr\u0007\u009b2J\u202eexe');
  });
});
