import { z } from 'zod';
import { SHORTHAND_JSON_SCHEMAS } from './normalise.js';
import { configSchema } from './schema.js';

type JsonObject = Record<string, unknown>;

/**
 * JSON Schema (draft 2020-12) of connector.yaml, generated from the zod
 * schema, for editors. Describes what people write: defaults are optional,
 * and the shorthands of the normalise step are accepted too.
 */
export function configJsonSchema(): JsonObject {
  const schema = z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as JsonObject;
  const defs = (schema.$defs ?? {}) as Record<string, JsonObject>;
  for (const [id, shorthand] of Object.entries(SHORTHAND_JSON_SCHEMAS)) {
    const def = defs[id];
    if (!def) continue;
    const { description, ...rest } = def;
    defs[id] = { description, anyOf: [rest, shorthand] };
  }
  // The single-source form (source, mapping beside api) is written without feeds: normalise.ts makes them.
  const dataset = defs.DatasetConfig;
  if (dataset && Array.isArray(dataset.required)) dataset.required = dataset.required.filter((k) => k !== 'feeds');
  return { $id: 'https://dataset-connector.local/connector.schema.json', title: 'dataset-connector configuration', ...schema };
}

/** The JSON Schema as the text shipped in config/connector.schema.json. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}
