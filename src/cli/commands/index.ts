/**
 * Every command of the CLI. Each module exports `register(program)`; add one
 * line here for a new command (commands are listed in help by name).
 */
export { register as validate } from './validate.js';
export { register as schema } from './schema.js';
export { register as doctor } from './doctor.js';
export { register as emulator } from './emulator.js';
