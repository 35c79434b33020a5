// Loaded with --import: records every module the process resolves (for lazy-load.test.ts).
import { register } from 'node:module';

register(new URL('./hooks.mjs', import.meta.url), { data: { log: process.env.DC_MODULE_LOG } });
