import type { Command } from 'commander';
import { registerHeldAction } from './held-action.js';

/** `discard <dataset>`: discard the held change's draft. */
export function register(program: Command): void {
  registerHeldAction(program, 'discard', 'drop the change a guard held (discard its draft)');
}
