import fc from 'fast-check';

/**
 * Property tests draw new cases on every developer run, so they keep finding inputs nobody thought of; in CI
 * (CI=true) they replay one fixed seed, so a landing is judged on the code, not on the draw. FC_SEED replays
 * the seed that a failure printed, anywhere.
 */
const fixed = process.env['FC_SEED'] ?? (process.env['CI'] === 'true' ? '20261127' : undefined);
if (fixed !== undefined) fc.configureGlobal({ seed: Number(fixed) });
