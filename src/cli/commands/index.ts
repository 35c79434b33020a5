/**
 * Every command of the CLI. Each module exports `register(program)`; add one
 * line here for a new command (commands are listed in help by name).
 */
export { register as validate } from './validate.js';
export { register as schema } from './schema.js';
export { register as doctor } from './doctor.js';
export { register as emulator } from './emulator.js';
export { register as run } from './run.js';
export { register as demo } from './demo.js';
export { register as call } from './call.js';
export { register as sync } from './sync.js';
export { register as plan } from './plan.js';
export { register as approve } from './approve.js';
export { register as discard } from './discard.js';
export { register as status } from './status.js';
export { register as preview } from './preview.js';
