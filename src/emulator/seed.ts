import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { parse as parseYaml } from 'yaml';
import { ConnectorError } from '../errors.js';
import { recordSchema } from '../model/record.js';
import type { Emulator } from './emulator.js';
import { DATASET_KEY_PREFIX } from './keys.js';
import { ROLES, type Role } from './types.js';

const seedKeySchema = z
  .object({
    key: z.string().startsWith(DATASET_KEY_PREFIX, `dataset keys start with ${DATASET_KEY_PREFIX}`).describe('the key text'),
    roles: z.array(z.enum(ROLES)).min(1).default([...ROLES]).describe('roles of the key'),
    legacy: z.boolean().default(false).describe('issued before roles: every role, always publishes (A12)'),
    revoked: z.boolean().default(false),
  })
  .strict();

const seedDatasetSchema = z
  .object({
    id: z.string().min(1).describe('dataset id used in the path'),
    name: z.string().optional(),
    api_enabled: z.boolean().default(true).describe("the dataset's external API switch"),
    keys: z.array(seedKeySchema).default([]),
    records: z.array(recordSchema).default([]).describe('published as version 1 when not empty'),
  })
  .strict();

/** A seed may give datasets as a map keyed by id; the schema takes a list. */
function datasetsAsList(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.entries(value as Record<string, unknown>).map(([id, d]) =>
    d !== null && typeof d === 'object' ? { id, ...(d as object) } : d,
  );
}

/** The seed file: datasets (a list, or a map keyed by id), keys and records, plus settings. */
export const emulatorSeedSchema = z
  .object({
    datasets: z.preprocess(datasetsAsList, z.array(seedDatasetSchema)).describe('a list, or a map keyed by dataset id'),
    job_duration_ms: z.number().int().min(0).optional(),
    rate_limit_per_minute: z.number().int().min(1).optional(),
    row_errors: z.enum(['job', 'sync']).optional(),
    legacy_jobs: z.enum(['publish', 'stage']).optional().describe("a legacy key's replace and upload jobs: publish although options.publish is false (default), or stage (A12)"),
  })
  .strict();

/** A seed, normalised (datasets as a list). */
export type EmulatorSeed = z.output<typeof emulatorSeedSchema>;
/** One dataset of a seed as written by hand (defaults may be left out). */
export type EmulatorSeedDatasetInput = z.input<typeof seedDatasetSchema>;
/** A seed as written in a file or by hand (defaults may be left out; datasets a list or a map by id). */
export interface EmulatorSeedInput {
  datasets: EmulatorSeedDatasetInput[] | Record<string, Omit<EmulatorSeedDatasetInput, 'id'>>;
  job_duration_ms?: number;
  rate_limit_per_minute?: number;
  row_errors?: 'job' | 'sync';
  legacy_jobs?: 'publish' | 'stage';
}

/** Check a seed object; throws ConnectorError SEED_INVALID (action stop) with the issues. */
export function parseEmulatorSeed(input: unknown, file?: string): EmulatorSeed {
  const result = emulatorSeedSchema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `${i.path.join('.') || '(seed)'}: ${i.message}`);
  throw new ConnectorError('SEED_INVALID', `the emulator seed is not valid: ${issues.join('; ')}`, {
    action: 'stop',
    context: { ...(file ? { file } : {}), issues },
  });
}

/** Read a YAML or JSON seed file. */
export async function loadEmulatorSeed(path: string): Promise<EmulatorSeed> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new ConnectorError('SEED_UNREADABLE', `cannot read the emulator seed ${path}`, { action: 'stop', cause, context: { file: path } });
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (cause) {
    throw new ConnectorError('SEED_INVALID', `the emulator seed ${path} is not YAML or JSON`, { action: 'stop', cause, context: { file: path } });
  }
  return parseEmulatorSeed(data, path);
}

/** The seed of `dataset-connector emulator --dataset … --key … --roles …`. */
export function emulatorSeedFromArgs(args: {
  dataset: string;
  key: string;
  roles?: string | readonly string[];
  legacy?: boolean;
  name?: string;
}): EmulatorSeed {
  const roles = typeof args.roles === 'string' ? args.roles.split(',').map((r) => r.trim()).filter(Boolean) : args.roles;
  return parseEmulatorSeed({
    datasets: [
      {
        id: args.dataset,
        ...(args.name ? { name: args.name } : {}),
        keys: [{ key: args.key, ...(roles ? { roles } : {}), legacy: args.legacy ?? false }],
      },
    ],
  });
}

/** Combine seeds: datasets of later seeds add to (or, by id, extend) earlier ones; later settings win. */
export function mergeEmulatorSeeds(...seeds: EmulatorSeed[]): EmulatorSeed {
  const out: EmulatorSeed = { datasets: [] };
  for (const seed of seeds) {
    for (const d of seed.datasets) {
      const existing = out.datasets.find((x) => x.id === d.id);
      if (!existing) out.datasets.push({ ...d, keys: [...d.keys], records: [...d.records] });
      else {
        existing.keys.push(...d.keys);
        if (d.records.length) existing.records = [...d.records];
        if (d.name) existing.name = d.name;
      }
    }
    if (seed.job_duration_ms !== undefined) out.job_duration_ms = seed.job_duration_ms;
    if (seed.rate_limit_per_minute !== undefined) out.rate_limit_per_minute = seed.rate_limit_per_minute;
    if (seed.row_errors !== undefined) out.row_errors = seed.row_errors;
    if (seed.legacy_jobs !== undefined) out.legacy_jobs = seed.legacy_jobs;
  }
  return out;
}

/** Load a seed into an emulator: settings, datasets (records as version 1), keys. */
export function applySeed(emulator: Emulator, seed: EmulatorSeed | EmulatorSeedInput): void {
  const s = parseEmulatorSeed(seed);
  emulator.configure({
    ...(s.job_duration_ms !== undefined ? { jobDurationMs: s.job_duration_ms } : {}),
    ...(s.rate_limit_per_minute !== undefined ? { rateLimitPerMinute: s.rate_limit_per_minute } : {}),
    ...(s.row_errors !== undefined ? { rowErrors: s.row_errors } : {}),
    ...(s.legacy_jobs !== undefined ? { legacyJobs: s.legacy_jobs } : {}),
  });
  for (const d of s.datasets) {
    emulator.addDataset({ id: d.id, ...(d.name ? { name: d.name } : {}), apiEnabled: d.api_enabled, records: d.records });
    for (const k of d.keys) {
      emulator.addKey({ dataset: d.id, key: k.key, roles: k.roles as Role[], legacy: k.legacy });
      if (k.revoked) emulator.revokeKey(k.key);
    }
  }
}
