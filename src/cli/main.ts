#!/usr/bin/env node
/** Entry point of the `dataset-connector` command (built to dist/cli/main.js). */
import { CommanderError } from 'commander';
import { ExitCode } from './exit-codes.js';
import { buildProgram } from './program.js';
import { reportError } from './report-error.js';

try {
  const program = await buildProgram(process.argv.slice(2));
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version "fail" with exit code 0; anything else is a usage error.
    process.exitCode = err.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
  } else {
    process.exitCode = reportError(err);
  }
}
