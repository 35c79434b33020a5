import { KEY_SHORTHAND } from './key-source.js';
import { LOG_LEVELS } from './schema.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Expand the shorthands people write into the one shape the schema checks
 * (house style 3: schema, normalise, rules). Pure; returns a new object and
 * leaves anything it does not recognise for the schema to report.
 *
 * - `log: debug`                → `log: {level: debug}`
 * - `health: true`              → `health: {}`;  `health: "127.0.0.1:9464"` → `{listen: …}`
 * - `key: "env:SHOP1_KEY"`      → `key: {env: SHOP1_KEY}` (also `file:…`, `credential:…`)
 */
export function normaliseConfig(raw: unknown): unknown {
  if (!isObj(raw)) return raw;
  const out: Obj = { ...raw };
  if (typeof out.log === 'string' && (LOG_LEVELS as readonly string[]).includes(out.log)) out.log = { level: out.log };
  if (out.health === true) out.health = {};
  else if (out.health === false) delete out.health;
  else if (typeof out.health === 'string') out.health = { listen: out.health };
  if (isObj(out.datasets)) {
    const datasets: Obj = {};
    for (const [name, ds] of Object.entries(out.datasets)) datasets[name] = normaliseDataset(ds);
    out.datasets = datasets;
  }
  return out;
}

function normaliseDataset(ds: unknown): unknown {
  if (!isObj(ds) || !isObj(ds.api)) return ds;
  const api: Obj = { ...ds.api };
  if (typeof api.key === 'string') {
    const m = KEY_SHORTHAND.exec(api.key);
    if (m) api.key = { [m[1] as string]: m[2] };
  }
  return { ...ds, api };
}

/** JSON Schema of the shorthands above, merged into the generated schema so editors accept them too. */
export const SHORTHAND_JSON_SCHEMAS: Record<string, object> = {
  KeySource: { type: 'string', pattern: KEY_SHORTHAND.source, description: 'Shorthand: "env:NAME", "file:/path" or "credential:NAME".' },
  HealthConfig: { type: ['boolean', 'string'], description: 'Shorthand: true for the default address, or "host:port".' },
  LogConfig: { type: 'string', enum: [...LOG_LEVELS], description: 'Shorthand for {level: …}.' },
};
