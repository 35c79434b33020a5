import type { Logger } from 'pino';
import { resolveKey } from '../config/key.js';
import type { Config } from '../config/schema.js';
import { ConnectorError } from '../errors.js';
import { event } from '../log/events.js';
import type { Secret } from '../secret.js';

/** Keys of the datasets that have one, and why the others have none. */
export interface ResolvedKeys {
  keys: Map<string, Secret>;
  failed: Array<{ dataset: string; code: string; message: string }>;
}

/** Read every dataset's key; a dataset whose key cannot be read is reported, the others go on. */
export async function resolveDatasetKeys(config: Config, logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<ResolvedKeys> {
  const out: ResolvedKeys = { keys: new Map(), failed: [] };
  for (const ds of Object.values(config.datasets)) {
    try {
      const key = await resolveKey(ds.api.key, env, {
        warn: (message) => logger.warn(event('key.warning', { dataset: ds.name, message }), 'key warning'),
      });
      out.keys.set(ds.name, key);
    } catch (err) {
      if (!(err instanceof ConnectorError)) throw err;
      out.failed.push({ dataset: ds.name, code: err.code, message: err.message });
    }
  }
  return out;
}
