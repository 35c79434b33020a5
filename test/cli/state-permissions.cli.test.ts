import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { datasetYaml, tempFiles } from '../config/helpers.js';
import { runCli } from './run-cli.js';

const mode = (path: string) => statSync(path).mode & 0o777;

let umask: number;
beforeEach(() => {
  umask = process.umask(0o022); // inherited by the child: a shell's usual umask
});
afterEach(() => {
  process.umask(umask);
});

describe('a CLI command that creates the state db (built CLI, umask 022)', () => {
  it('creates the state folder 0700 and state.db 0600, as the daemon does', async () => {
    const dir = await tempFiles({ 'connector.yaml': `state_dir: state/of/shop\ndatasets:\n${datasetYaml('shop-1')}\n` });
    const r = await runCli(['status', '--config', join(dir, 'connector.yaml')]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ datasets: [{ dataset: 'shop-1', lastSync: null }] });
    expect([mode(join(dir, 'state')), mode(join(dir, 'state/of')), mode(join(dir, 'state/of/shop')), mode(join(dir, 'state/of/shop/state.db'))]).toEqual([
      0o700, 0o700, 0o700, 0o600,
    ]);
  });
});
