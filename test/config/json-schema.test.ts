import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configJsonSchema, configJsonSchemaText } from '../../src/config/index.js';

const shipped = fileURLToPath(new URL('../../config/connector.schema.json', import.meta.url));

describe('config/connector.schema.json', () => {
  it('is the schema generated from the zod schema (regenerate: npm run config:schema)', async () => {
    const onDisk = await readFile(shipped, 'utf8');
    expect(onDisk, 'config/connector.schema.json is stale: run `npm run config:schema`').toBe(configJsonSchemaText());
  });

  it('refuses unknown keys and accepts the normalise shorthands', () => {
    const schema = configJsonSchema() as { additionalProperties?: unknown; $defs: Record<string, { anyOf?: unknown[] }> };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.$defs.KeySource?.anyOf).toHaveLength(2);
    expect(schema.$defs.LogConfig?.anyOf).toHaveLength(2);
  });
});
