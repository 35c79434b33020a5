import { z } from 'zod';
import { keySourceSchema } from './key-source.js';

/** Retry of transient API failures (network errors, 429, 5xx). */
export const retryConfigSchema = z
  .strictObject({
    max_attempts: z.int().min(1).max(20).default(5).describe('Attempts per request, the first one included.'),
    base_delay_ms: z.int().min(1).max(600_000).default(1_000).describe('First back-off delay; doubles on each retry, with jitter.'),
    max_delay_ms: z.int().min(1).max(3_600_000).default(60_000).describe('Upper bound of one back-off delay.'),
  })
  .describe('Retry of transient failures.');

/** How to reach one dataset of the Business Dataset Editing API. */
export const apiConfigSchema = z
  .strictObject({
    base_url: z
      .url({
        protocol: /^https?$/,
        error: (iss) => (iss.input === undefined ? undefined : 'expected an http(s) URL such as https://api.example.com'),
      })
      .describe('Service base URL, without the /api/v1/… path (e.g. https://api.example.com).'),
    dataset_id: z
      .string()
      .min(1)
      .regex(/^[A-Za-z0-9._:-]+$/, 'expected a dataset id as shown in the portal')
      .optional()
      .describe('Dataset id as shown in the portal; defaults to the dataset name in this file.'),
    key: keySourceSchema,
    rate_per_minute: z
      .int()
      .min(1)
      .max(120)
      .default(100)
      .describe('Requests per rolling minute sent with this key by every connector process using this state_dir together: the daemon and each CLI command share one window in the state database (the service allows 120 per key, A24).'),
    connect_timeout_ms: z.int().min(100).max(300_000).default(10_000).describe('Time allowed to open a connection.'),
    request_timeout_ms: z.int().min(100).max(3_600_000).default(60_000).describe('Time allowed for one request, body included.'),
    retry: retryConfigSchema.default({ max_attempts: 5, base_delay_ms: 1_000, max_delay_ms: 60_000 }),
  })
  .describe('The dataset API: address, dataset id, key source, rate and timeouts.');

export type ApiConfig = z.infer<typeof apiConfigSchema>;
