import type { DatasetClientOptions } from '../api/client.js';
import type { Secret } from '../secret.js';
import { rereadKey } from './key.js';
import type { DatasetConfig } from './schema.js';

/** Options of a DatasetClient for one configured dataset (the key resolved by resolveKey). */
export function clientOptionsFor(
  ds: DatasetConfig,
  key: Secret,
  extra: Partial<Omit<DatasetClientOptions, 'baseUrl' | 'datasetId' | 'key'>> = {},
): DatasetClientOptions {
  return {
    baseUrl: ds.api.base_url,
    datasetId: ds.api.dataset_id,
    key,
    ratePerMinute: ds.api.rate_per_minute,
    connectTimeoutMs: ds.api.connect_timeout_ms,
    requestTimeoutMs: ds.api.request_timeout_ms,
    rereadKey, // a 401 reads api.key's source again: a key reissued with a grace period is picked up
    ...extra,
    retry: {
      maxAttempts: ds.api.retry.max_attempts,
      baseDelayMs: ds.api.retry.base_delay_ms,
      maxDelayMs: ds.api.retry.max_delay_ms,
      ...extra.retry,
    },
  };
}
