import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import pino from 'pino';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { replaceBody } from '../../src/api/bodies.js';
import { recordJson } from '../../src/model/record-json.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { readTallies, recount } from '../../src/snapshot/tallies.js';
import { planDir } from '../../src/sync/executor/plan-files.js';
import { removeUnconfiguredKept } from '../../src/sync/unchanged/sync-kept.js';
import { SourceSorter } from '../../src/sync/disk/source-sorter.js';
import { SourceError } from '../../src/model/source-error.js';
import { NEVER_FOLLOW, closeFile, openRegularFile } from '../../src/sources/open-file.js';
import { WorkbookArchive } from '../../src/sources/xlsx/archive.js';
import { readSharedStrings } from '../../src/sources/xlsx/shared-strings.js';
import { readSheetRows } from '../../src/sources/xlsx/sheet.js';
import { handMadeXlsx } from '../sources/xlsx-parts.js';
import { rec, recs, scenario, type Scenario } from './harness.js';

/**
 * Review rv18d of issue 18 (sq18: a first sync's PUT /records sent from a private copy of its measured bytes,
 * tallies counted while the server reads). Real HTTP to the emulator, real files, real SQLite.
 */

const open: Scenario[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** Every replace-body.json copy in the scenario's plan dir. */
function copies(s: Scenario): string[] {
  const dir = planDir(s.db.path);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith('.changeset'))
    .map((n) => join(dir, n, 'replace-body.json'))
    .filter((p) => existsSync(p));
}

/** The replace path (PUT /records), not the upload a large first sync prefers. */
const REPLACE = { policy: { replace: { prefer_import: false } } };

const puts = (s: Scenario) => s.em.emulator.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/records')).length;

function talliesMatchRecount(s: Scenario): void {
  const kept = readTallies(s.db.conn, 'shop-1');
  expect(kept).toEqual(recount(s.db.conn, 'shop-1'));
}

describe('review rv18d: the replace body copy (sq18)', () => {
  it('probe: the copy altered (same length) between a reset send and its retry: the alteration is never published, the export is, the copy is removed', async () => {
    let copy: string | null = null;
    let tampered = false;
    const s = await scenario({
      ...REPLACE,
      onRequest: (e) => {
        if (tampered || e.method !== 'PUT' || !e.path.endsWith('/records')) return;
        const c = copies(s)[0];
        if (!c) return;
        copy = c;
        writeFileSync(c, readFileSync(c, 'utf8').replaceAll('Item r-', 'EVIL r-'));
        tampered = true;
      },
    });
    open.push(s);
    s.em.emulator.faults.add({ method: 'PUT', path: /\/records$/, reset: true });
    const rows = recs(3000);
    const file = await s.writeExport(rows);
    const first = await s.engine.sync(s.ds, { file });
    expect(tampered).toBe(true);
    expect(s.published().filter((r) => r.display_name.startsWith('EVIL'))).toEqual([]);
    expect(existsSync(copy!)).toBe(false);
    // No request that carried a whole body was accepted with the tampered bytes: nothing staged or published from it.
    expect(s.em.emulator.counters.publishes).toBe(first.result === 'published' ? 1 : 0);
    const second = first.result === 'published' ? first : await s.engine.sync(s.ds, { file });
    expect(second.result).toBe('published');
    expect(s.published().map((r) => r.display_name).sort()).toEqual(rows.map((r) => r.display_name).sort());
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
    expect(copies(s)).toEqual([]);
    talliesMatchRecount(s);
    expect(puts(s)).toBeGreaterThan(0);
  }, 60_000);

  it('probe: a first sync whose replace is reset once and then rate limited: tallies after confirm equal a full recount, one job, no copy left', async () => {
    const s = await scenario(REPLACE);
    open.push(s);
    s.em.emulator.faults.add({ method: 'PUT', path: /\/records$/, reset: true });
    s.em.emulator.faults.add({ method: 'PUT', path: /\/records$/, status: 429, code: 'RATE_LIMITED', retryAfterS: 1 });
    const rows = recs(5000).map((r, i) => ({ ...r, api_value: i % 3 === 0 ? '0' : `${i}` }));
    const file = await s.writeExport(rows);
    let sum = await s.engine.sync(s.ds, { file });
    if (sum.result !== 'published') sum = await s.engine.sync(s.ds, { file });
    expect(sum.result).toBe('published');
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
    expect(copies(s)).toEqual([]);
    talliesMatchRecount(s);
    expect(puts(s)).toBeGreaterThan(0);
    expect(readTallies(s.db.conn, 'shop-1')!.records).toBe(5000);
  }, 60_000);

  it('probe: a portal edit lands on the server between the first sync\'s plan and its send: tallies equal a recount whatever the outcome', async () => {
    let edited = false;
    const s = await scenario({
      ...REPLACE,
      onRequest: (e) => {
        if (edited || e.method !== 'GET') return;
        edited = true;
        s.em.emulator.portalPublish('shop-1', { upsert: [rec('portal-1', 'Portal item')] });
      },
    });
    open.push(s);
    const file = await s.writeExport(recs(500));
    let sum = await s.engine.sync(s.ds, { file });
    if (sum.result !== 'published') sum = await s.engine.sync(s.ds, { file });
    talliesMatchRecount(s);
    expect(puts(s)).toBeGreaterThan(0);
    expect(copies(s)).toEqual([]);
  }, 60_000);

  it('probe: the replace applied but its answer lost, every retry reset, then a new process resumes: the same key and bytes, one job, tallies equal a recount, no copy left', async () => {
    const s = await scenario(REPLACE);
    open.push(s);
    const f = s.em.emulator.faults;
    f.add({ method: 'PUT', path: /\/records$/, applyThenDrop: true });
    f.add({ method: 'PUT', path: /\/records$/, reset: true, count: 2 });
    const rows = recs(4000);
    const file = await s.writeExport(rows);
    const first = await s.engine.sync(s.ds, { file });
    expect(first.result).not.toBe('published');
    expect(copies(s)).toEqual([]);
    s.restart();
    let sum = await s.engine.sync(s.ds, { file });
    if (sum.result !== 'published') sum = await s.engine.sync(s.ds, { file });
    expect(sum.result).toBe('published');
    expect(f.list()).toEqual([]);
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
    expect(s.em.emulator.counters.publishes).toBe(1);
    const sent = s.em.emulator.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/records') && r.bodyBytes !== undefined);
    expect(new Set(sent.map((r) => r.idempotencyKey)).size).toBe(1);
    expect(new Set(sent.map((r) => r.bodyBytes)).size).toBe(1);
    expect(s.published()).toHaveLength(4000);
    expect(copies(s)).toEqual([]);
    talliesMatchRecount(s);
  }, 60_000);

  it(
    // A copy longer than measured whose first `length` bytes are another body ending on a chunk boundary: only the last
    // chunk is withheld by the hash check, so that other body is handed to the socket whole. Measured: undici's
    // Readable.from reads ahead, the throw destroys the request before the server has read Content-Length bytes
    // (bodyBytes never logged, no job). Kept as a probe: it relies on that read-ahead, not on bodies.ts stopping at `length`.
    'probe: a copy with another body of the measured length followed by 64 KiB more: the server never receives that other body whole',
    async () => {
      // An export whose body is exactly a multiple of 64 KiB, so the tampered body ends on a chunk boundary.
      const rows: DatasetRecord[] = recs(2000);
      const len = (rs: DatasetRecord[]) => replaceBody(() => rs.map((r) => ({ json: recordJson(r) })), { publish: false }).body.length;
      const pad = 65536 * Math.ceil(len(rows) / 65536) - len(rows);
      for (let i = 0; i < rows.length; i++) rows[i] = { ...rows[i]!, display_name: rows[i]!.display_name + 'x'.repeat(Math.floor(pad / rows.length) + (i < pad % rows.length ? 1 : 0)) };
      expect(len(rows) % 65536).toBe(0);
      let tampered = false;
      const s = await scenario({
        ...REPLACE,
        onRequest: (e) => {
          if (tampered || e.method !== 'PUT' || !e.path.endsWith('/records')) return;
          const c = copies(s)[0];
          if (!c) return;
          const body = readFileSync(c, 'utf8').replaceAll('Item r-', 'EVIL r-');
          writeFileSync(c, body + ' '.repeat(65536));
          tampered = true;
        },
      });
      open.push(s);
      s.em.emulator.faults.add({ method: 'PUT', path: /\/records$/, reset: true });
      const file = await s.writeExport(rows);
      await s.engine.sync(s.ds, { file });
      expect(tampered).toBe(true);
      const whole = s.em.emulator.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/records') && r.bodyBytes === len(rows));
      // The first attempt was reset before its body was read; any whole body received later is the tampered one.
      expect(whole).toEqual([]);
    },
    60_000,
  );
});

describe('review rv18d: kept-rows folders of datasets not configured (km18)', () => {
  it('probe: through a symlinked state dir, only a real folder named for a valid, unconfigured dataset goes; links, files, other cases and dotted names stay, and a link\'s target is untouched', () => {
    const root = mkdtempSync(join(tmpdir(), 'dc-rv18d-'));
    const real = join(root, 'real-plans');
    mkdirSync(real);
    const plans = join(root, 'plans');
    symlinkSync(real, plans);
    const outside = join(root, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'precious.csv'), 'keep me');
    const mk = (name: string) => {
      mkdirSync(join(real, name));
      writeFileSync(join(real, name, 'kept-rows'), 'x');
    };
    mk('unchanged-rows.shop-1'); // configured
    mk('unchanged-rows.old-shop'); // not configured: removed
    mk('unchanged-rows.Shop-1'); // not a dataset name (upper case)
    mk('unchanged-rows.shop-1.bak'); // not a dataset name (dot)
    mk('unchanged-rows.'); // empty name
    symlinkSync(outside, join(real, 'unchanged-rows.linked'));
    writeFileSync(join(real, 'unchanged-rows.file'), 'a file');
    mk('shop-1.changeset');
    const removed = removeUnconfiguredKept(plans, new Set(['shop-1']), pino({ level: 'silent' }));
    expect(removed).toEqual([join(plans, 'unchanged-rows.old-shop')]);
    expect(readdirSync(real).sort()).toEqual(
      ['shop-1.changeset', 'unchanged-rows.', 'unchanged-rows.Shop-1', 'unchanged-rows.file', 'unchanged-rows.linked', 'unchanged-rows.shop-1', 'unchanged-rows.shop-1.bak'].sort(),
    );
    expect(readFileSync(join(outside, 'precious.csv'), 'utf8')).toBe('keep me');
  });
});

describe('review rv18d: hostile shared strings through the arena table (xl18)', () => {
  /** Sheet 1's rows by the fast path or the general one, or the refusal. */
  async function rows(file: string, general: boolean, piece: number): Promise<unknown> {
    const f = await openRegularFile(file, NEVER_FOLLOW);
    const archive = await WorkbookArchive.open(file, f.fd, f.size, piece);
    const out: Array<[number, string[]]> = [];
    try {
      const table = await readSharedStrings(archive, 'xl/sharedStrings.xml', 1 << 20, general);
      const ctx = { sharedStrings: table, dateStyles: [false], date1904: false, maxChars: 100_000, general };
      for await (const _ of readSheetRows(archive, 'xl/worksheets/sheet1.xml', ctx, (cells, row) => out.push([row, [...cells]]))) void _;
      return out;
    } catch (err) {
      if (err instanceof SourceError) return { refused: err.code, out };
      throw err;
    } finally {
      archive.close();
      await closeFile(f.fd);
    }
  }

  it('probe: astral characters, _xHHHH_ escapes (a pair, a lone surrogate, an escaped escape), long items, each used many times, and indexes out of range: the fast path gives what the general path gives', async () => {
    const texts = ['plain', '😀 emoji', '_x0041_', '_xD83D__xDE00_', '_xD800_', 'é_x005F_x0041_', 'y'.repeat(300) + '😀', '', '_x00e9_ ascii', 'tail_'];
    const si = texts.map((t, i) => (i % 2 ? `<si><t>${t}</t></si>` : `<si><t xml:space="preserve">${t}</t></si>`)).join('');
    const refs = [...texts.keys(), ...texts.keys(), ...texts.keys()];
    const cells = (idx: Array<number | string>) => idx.map((v, j) => `<c r="${String.fromCharCode(65 + (j % 26))}${1}" t="s"><v>${v}</v></c>`);
    const body = refs.map((v, r) => `<row r="${r + 1}">${cells([v, (v * 7) % texts.length]).join('').replaceAll('1"', `${r + 1}"`)}</row>`).join('');
    for (const bad of ['10', '4294967296', '-1', '1.5', '99999999999999999999']) {
      const dir = mkdtempSync(join(tmpdir(), 'dc-rv18d-x-'));
      const file = join(dir, 'b.xlsx');
      const xml = `<worksheet><sheetData>${body}<row r="${refs.length + 1}"><c r="A${refs.length + 1}" t="s"><v>${bad}</v></c></row></sheetData></worksheet>`;
      writeFileSync(file, handMadeXlsx({ sheets: [{ name: 'S', xml }], sharedStrings: si }));
      for (const piece of [5, 64, 1 << 16]) {
        const general = await rows(file, true, piece);
        expect(JSON.stringify(general)).toContain('😀 emoji'); // the rows were read (a refusal keeps them)
        expect(await rows(file, false, piece), `${bad} piece ${piece}`).toEqual(general);
      }
    }
  });
});

describe('review rv18d: repeated ids in binary id runs (fr18)', () => {
  it('probe: ids with JSON escapes, astral characters, a NUL, and prefixes of one another, repeated across many runs: the same repeats (id, line, first line) as the in-memory sort', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dc-rv18d-r-'));
    const ids = ['a"b', 'a\\b', 'tab\tx', '😀', '😀x', 'nul\u0000', 'é', 'e\u0301', 'a', 'ab', 'a\u0000', '\u007f', '\u2028', 'Z'];
    const order: string[] = [];
    for (let k = 0; k < 40; k++) for (let j = 0; j < ids.length; j++) if ((k * 31 + j * 7) % 5 !== 0 || k === 0) order.push(ids[(j + k) % ids.length]!);
    const run = (runBytes: number, memoryChars: number) => {
      const sorter = new SourceSorter(dir, runBytes, memoryChars);
      order.forEach((id, i) => sorter.addRecord(rec(id), i + 2));
      const dups: Array<[string, number, number]> = [];
      const src = sorter.finish((id, line, first) => dups.push([id, line, first]));
      return { dups: dups.sort((a, b) => a[1] - b[1]), count: src.count, runs: src.runs.length };
    };
    const mem = run(1 << 24, 1 << 24);
    const disk = run(300, 0);
    expect(disk.runs).toBeGreaterThan(3);
    expect(disk.dups).toEqual(mem.dups);
    expect(disk.count).toBe(mem.count);
    expect(mem.count).toBe(ids.length);
  });

  it.fails(
    // What a person would lose: a record. Through runs on disk (a source larger than the sorter keeps in memory), ids
    // are written as UTF-8, where every lone surrogate becomes U+FFFD: two different ids (an XLSX cell's _xD800_ and
    // _xDC00_ escapes, which shared-strings.ts keeps as they are) become one; the second is reported a repeat and left
    // out, and the kept one's record_id comes back as U+FFFD. In memory both are kept. Pre-existing: the same at
    // 7059cf7 (before fr18), so not fr18's doing. Latent today: measured, a sync of an XLSX export whose id cell is
    // _xD800_ is refused with a row error before the sorter (ROW_ERRORS), so no export reaches this now; the sorter's
    // promise (the same repeats on disk as in memory) breaks for any future caller that lets such an id through.
    'probe: two different lone surrogates as ids (an XLSX _xD800_ / _xDC00_ escape), each once: no repeat on disk either',
    () => {
    const dir = mkdtempSync(join(tmpdir(), 'dc-rv18d-s-'));
    const order = ['\ud800', '\udc00', ...Array.from({ length: 200 }, (_, i) => `k-${i}`)];
    const run = (runBytes: number, memoryChars: number) => {
      const sorter = new SourceSorter(dir, runBytes, memoryChars);
      order.forEach((id, i) => sorter.addRecord(rec(id), i + 2));
      const dups: Array<[string, number, number]> = [];
      const src = sorter.finish((id, line, first) => dups.push([id, line, first]));
      return { dups, count: src.count, ids: [...src.entries()].map((e) => e.record_id) };
    };
    const mem = run(1 << 24, 1 << 24);
    const disk = run(300, 0);
    expect(mem.dups).toEqual([]);
    expect(disk.dups).toEqual([]);
    expect(disk.count).toBe(mem.count);
  });
});
