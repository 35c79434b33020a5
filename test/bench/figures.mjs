// Figures of the bench: each printed with its target and a verdict, and (with --json) written as one JSON
// line on stdout (the text then goes to stderr), so that figures can be compared between commits:
//   npm run bench -- --json > figures-$(git rev-parse --short HEAD).jsonl A figure records the machine's load average at the
// time (the machine may be shared: wall-clock figures are then noisy; CPU time, peak RSS and byte counts are not).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';

const JSON_OUT = process.argv.includes('--json');
const all = [];

/** A line of text for people (stderr when stdout carries the JSON figures). */
export function say(text) {
  if (JSON_OUT) process.stderr.write(`${text}\n`);
  else console.log(text);
}

let commit = null;
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
} catch {
  commit = null;
}

/**
 * Record one figure. `target`: { max } or { min } (inclusive), or null when it is for information.
 * `detail`: anything else worth keeping (CPU beside wall time, the yardstick, the breakdown).
 */
export function figure(name, value, unit, target = null, detail = {}) {
  const verdict = target === null ? 'info' : (target.max !== undefined ? value <= target.max : value >= target.min) ? 'met' : 'NOT met';
  const load = Number(loadavg()[0].toFixed(2));
  const f = { figure: name, value: round(value), unit, target, verdict, load, commit, at: new Date().toISOString(), ...detail };
  all.push(f);
  const t = target === null ? '' : ` (target ${target.max !== undefined ? '≤' : '≥'} ${target.max ?? target.min} ${unit})`;
  say(`  ${name}: ${fmt(value)} ${unit}${t} ${target === null ? '' : verdict}${load >= 2 ? `  [load ${load}]` : ''}`);
  if (JSON_OUT) process.stdout.write(`${JSON.stringify(f)}\n`);
  return f;
}

/** The figures recorded so far. */
export function figures() {
  return all;
}

/** Print the verdicts that were not met (and say so when all were). */
export function summary() {
  const missed = all.filter((f) => f.verdict === 'NOT met');
  say(missed.length === 0 ? 'all targets met' : `targets NOT met: ${missed.map((f) => `${f.figure} (${fmt(f.value)} ${f.unit})`).join('; ')}`);
}

function round(v) {
  return typeof v === 'number' ? Math.round(v * 100) / 100 : v;
}

function fmt(v) {
  return typeof v === 'number' ? (Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en') : String(round(v))) : String(v);
}

/** Run `node …args` to its end; its stdout is one JSON object (the measurement), its own peak RSS in it. */
export function child(args, opts = {}) {
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 16 << 20, ...opts });
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

/** Start a long-running `node …args` whose first stdout line is JSON; resolves with it and the process. */
export function startChild(args) {
  const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ proc: p, info: JSON.parse(buf.slice(0, nl)) });
    });
    p.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}`)));
  });
}

/** Stop a child started by startChild (by its own pid). */
export async function stopChild(p) {
  if (p.exitCode !== null) return;
  const done = new Promise((resolve) => p.once('exit', resolve));
  p.kill('SIGTERM');
  await done;
}

/** Wall time, CPU time (user + system) and peak RSS of what `fn` does in this process. */
export async function measured(fn) {
  global.gc?.();
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const out = await fn();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, maxRssMb: process.resourceUsage().maxRSS / 1024, out };
}

/** Median of numbers. */
export function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
}
