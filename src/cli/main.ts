#!/usr/bin/env node
/** Entry point of the `dataset-connector` command (built to dist/cli/main.js). */
import { holdForStartUp, releaseStartUpHold } from '../start-up-hold.js';

// Before the modules load (hence the imports below are dynamic): the daemon releases the hold once started, every other command before its action.
holdForStartUp();
// A reader that closed our stdout (`status | head -1`) has all it wanted: end quietly, not with an EPIPE stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});
const { CommanderError } = await import('commander');
const { ExitCode } = await import('./exit-codes.js');
const { buildProgram } = await import('./program.js');
const { reportError } = await import('./report-error.js');

try {
  const program = await buildProgram(process.argv.slice(2));
  program.hook('preAction', (_program, action) => {
    if (action.name() !== 'run') releaseStartUpHold();
  });
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version "fail" with exit code 0; anything else is a usage error.
    process.exitCode = err.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
  } else {
    process.exitCode = reportError(err);
  }
}
