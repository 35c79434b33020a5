import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { tempFiles } from '../config/helpers.js';

const ROOT = join(import.meta.dirname, '../..');

/** The YAML example of README's feeds section. */
function readmeExample(): string {
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('### Feeds'));
  return /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
}

describe("README's feeds example", () => {
  it('is a valid configuration with the roles it describes', async () => {
    const dir = await tempFiles({ 'connector.yaml': readmeExample() });
    const ds = (await loadConfig(join(dir, 'connector.yaml'))).datasets['shop-1']!;
    expect(Object.fromEntries(Object.entries(ds.feeds).map(([n, f]) => [n, f.role]))).toEqual({ main: 'full', stock: 'update', changes: 'changes' });
    expect(ds.feeds.stock!.missing).toEqual({ strategy: 'leave' });
    expect(ds.feed).toBe('main');
  });
});
