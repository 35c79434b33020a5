import { parse } from 'yaml';
import { configSchema } from '../../config/schema.js';
import { normaliseConfig } from '../../config/normalise.js';
import { checkRules } from '../../config/rules.js';
import { previewExport } from '../preview-report.js';
import { ExitCode, type ExitCodeValue } from '../exit-codes.js';
import { buildInit, type InitOptions } from './build.js';
import { sampleExport } from './sample.js';

/**
 * Sample the export, print the proposed configuration on `out`, and a
 * preview of the export read with exactly that configuration (parsed back
 * from the printed text) on `err`. A proposal that would not pass
 * `validate` is never printed as if it did: that is an internal error.
 */
export async function proposeConfig(file: string, opts: InitOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<ExitCodeValue> {
  const sample = await sampleExport(file);
  const result = buildInit(file, sample, opts);
  const parsed = configSchema.safeParse(normaliseConfig(parse(result.yaml)));
  const problems = parsed.success ? checkRules(parsed.data).map((r) => `${r.path.join('.')}: ${r.message}`) : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  if (!parsed.success || problems.length > 0) {
    err.write(`internal error: the proposed configuration does not validate:\n${problems.map((p) => `  ${p}`).join('\n')}\n${result.yaml}`);
    return ExitCode.FAILURE;
  }
  out.write(result.yaml);
  const ds = parsed.data.datasets[opts.dataset]!;
  for (const w of result.warnings) err.write(`warning: ${w}\n`);
  err.write(`\npreview of ${file} with this configuration:\n`);
  await previewExport(file, ds.source, ds.mapping, err, { limit: 10 });
  return ExitCode.OK;
}
