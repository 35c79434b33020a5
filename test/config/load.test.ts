import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type ConfigIssue } from '../../src/config/index.js';
import { datasetYaml, tempFiles } from './helpers.js';

async function issuesOf(files: Record<string, string>, main = 'connector.yaml'): Promise<ConfigIssue[]> {
  const dir = await tempFiles(files);
  try {
    await loadConfig(join(dir, main));
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => ({ ...i, file: i.file.slice(dir.length + 1) }));
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('loads a minimal config with defaults and the dataset name as dataset_id', async () => {
    const dir = await tempFiles({ 'connector.yaml': `datasets:\n${datasetYaml('shop-1')}\n` });
    const config = await loadConfig(join(dir, 'connector.yaml'));
    expect(config.state_dir).toBe('/var/lib/dataset-connector');
    expect(config.log).toEqual({ level: 'info', format: 'json' });
    const ds = config.datasets['shop-1']!;
    expect(ds.name).toBe('shop-1');
    expect(ds.api.dataset_id).toBe('shop-1');
    expect(ds.api.rate_per_minute).toBe(100);
    expect(ds.api.key).toEqual({ env: 'SHOP_1_KEY' });
    expect(ds.file).toBe(join(dir, 'connector.yaml'));
    expect(config.files).toEqual([join(dir, 'connector.yaml')]);
  });

  it('reports an unknown key with its line, path and the allowed options', async () => {
    const issues = await issuesOf({ 'connector.yaml': `timezone: UTC\nstate_dirr: /x\ndatasets:\n${datasetYaml('shop-1')}\n` });
    expect(issues).toEqual([
      { file: 'connector.yaml', line: 2, path: 'state_dirr', message: expect.stringMatching(/unknown option "state_dirr" \(expected one of: state_dir, timezone/) },
    ]);
  });
});
