import type { Command } from 'commander';

/** What every command module exports: `register(program)` adds the command, its options and help. */
export interface CommandModule {
  register(program: Command): void;
}

/**
 * Every command of the CLI, by the name it registers, loaded only when needed
 * (help lists them by name). Add one line here for a new command. Keep each
 * module's own imports light: its action loads what it runs with `await
 * import(…)`, so `--help` and the other commands never pay for it.
 */
export const COMMANDS: Readonly<Record<string, () => Promise<CommandModule>>> = {
  validate: () => import('./validate.js'),
  schema: () => import('./schema.js'),
  doctor: () => import('./doctor.js'),
  emulator: () => import('./emulator.js'),
  run: () => import('./run.js'),
  demo: () => import('./demo.js'),
  call: () => import('./call.js'),
  sync: () => import('./sync.js'),
  plan: () => import('./plan.js'),
  approve: () => import('./approve.js'),
  discard: () => import('./discard.js'),
  status: () => import('./status.js'),
  preview: () => import('./preview.js'),
  init: () => import('./init.js'),
  retry: () => import('./retry.js'),
  config: () => import('./config.js'),
  why: () => import('./why.js'),
  restore: () => import('./restore.js'),
  pause: () => import('./pause.js'),
  resume: () => import('./resume.js'),
};
