import type { Command } from 'commander';
import { registerHeldAction } from './held-action.js';

/** `approve <dataset>`: publish the held change with exactly the flags its guards need. */
export function register(program: Command): void {
  registerHeldAction(program, 'approve', 'publish the change a guard held, with only the allow flag it needs');
}
