import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 18 (src/start-up-hold.ts): the hold works only if V8 reads the flags after its heap is set up, which
// node does not promise (v8.setFlagsFromString); these run it in a process of its own, on the built dist/.
const root = fileURLToPath(new URL('../..', import.meta.url));
const holdModule = pathToFileURL(join(root, 'dist/start-up-hold.js')).href;

/** Run an ES module script in a node of its own with these node flags; its stdout as JSON. */
function runScript(script: string, flags: string[] = []): unknown {
  const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  if (r.status !== 0) throw new Error(`the script exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Allocate objects that survive (as loading modules does), then the young generation's size. */
const GROW = `
import { getHeapSpaceStatistics } from 'node:v8';
const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const kept = [];
const grow = () => { for (let i = 0; i < 300000; i++) kept.push({ i, s: 'x' + i, a: [i] }); return young(); };
`;

describe('the start-up hold, in a node process of its own', () => {
  it('keeps the young generation at its start size while held, and lets it grow once released', () => {
    const r = runScript(`${GROW}
      const { holdForStartUp, releaseStartUpHold, startUpHeld } = await import(${JSON.stringify(holdModule)});
      const start = young();
      holdForStartUp();
      const heldAs = startUpHeld();
      const whileHeld = grow();
      releaseStartUpHold();
      const released = grow();
      console.log(JSON.stringify({ start, heldAs, whileHeld, released, after: startUpHeld() }));`) as Record<string, unknown>;
    expect(r.heldAs).toEqual(['semi-space-growth-factor', 'turbofan']);
    // Its first collection commits the second semi-space (2 × 1 MB); unheld, the same allocation grows it to 16 × that.
    expect(r.whileHeld as number).toBeLessThanOrEqual(2 * (r.start as number));
    expect(r.released as number).toBeGreaterThanOrEqual(4 * (r.whileHeld as number));
    expect(r.after).toEqual([]);
  });

  it('leaves alone a flag node was given: the young generation grows as told, and only the compiler is held', () => {
    const r = runScript(`${GROW}
      const { holdForStartUp, startUpHeld } = await import(${JSON.stringify(holdModule)});
      const start = young();
      holdForStartUp();
      console.log(JSON.stringify({ start, heldAs: startUpHeld(), grown: grow() }));`, ['--semi-space-growth-factor=2']) as Record<string, unknown>;
    expect(r.heldAs).toEqual(['turbofan']);
    expect(r.grown as number).toBeGreaterThan(r.start as number);
  });

  it('is given back by the CLI before the action of a command other than run', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dc-hold-'));
    const seen = join(dir, 'held.json');
    // Loaded before main.js: the same module instance as the CLI's; what is held when the process ends.
    const preload = join(dir, 'preload.mjs');
    await writeFile(preload, `import { writeFileSync } from 'node:fs';\nimport { startUpHeld } from ${JSON.stringify(holdModule)};\nprocess.on('exit', () => writeFileSync(${JSON.stringify(seen)}, JSON.stringify(startUpHeld())));\n`);
    const r = spawnSync(process.execPath, ['--import', pathToFileURL(preload).href, join(root, 'dist/cli/main.js'), 'schema'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveProperty('properties');
    expect(JSON.parse(await readFile(seen, 'utf8'))).toEqual([]);
  });
});
