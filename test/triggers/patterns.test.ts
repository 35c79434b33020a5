import { describe, expect, it } from 'vitest';
import { globToRegExp, nameFilter } from '../../src/triggers/patterns.js';
import { compileMarker } from '../../src/config/marker.js';
import { watchConfigSchema } from '../../src/config/watch.js';

describe('file-name globs', () => {
  it.each([
    ['*.csv', 'export.csv', true],
    ['*.csv', 'export.csv.tmp', false],
    ['*.csv', 'EXPORT.CSV', false],
    ['export-????.csv', 'export-0412.csv', true],
    ['export-????.csv', 'export-412.csv', false],
    ['[ab]*.txt', 'a1.txt', true],
    ['[!ab]*.txt', 'a1.txt', false],
    ['~$*', '~$book.xlsx', true],
    ['(x)+.csv', '(x)+.csv', true],
  ])('%s matches %s: %s', (glob, name, want) => {
    expect(globToRegExp(glob).test(name)).toBe(want);
  });
});

describe('name filter', () => {
  const defaults = nameFilter([], []);
  it.each(['.hidden.csv', '~$stock.xlsx', 'stock.tmp', 'stock.csv.part', 'stock.rejected.csv'])('ignores %s by default', (name) => {
    expect(defaults.accepts(name)).toBe(false);
  });

  it('accepts anything else when include is empty', () => {
    expect(defaults.accepts('stock.csv')).toBe(true);
    expect(defaults.accepts('stock.xlsx')).toBe(true);
  });

  it('keeps only included names, and ignore wins over include', () => {
    const f = nameFilter(['*.csv'], ['old-*']);
    expect(f.accepts('stock.csv')).toBe(true);
    expect(f.accepts('stock.xlsx')).toBe(false);
    expect(f.accepts('old-stock.csv')).toBe(false);
    expect(f.accepts('.stock.csv')).toBe(false);
  });
});

describe('markers', () => {
  it('names the marker of a file by {name} and {stem}', () => {
    expect(compileMarker('{name}.done').markerFor('stock.csv')).toBe('stock.csv.done');
    expect(compileMarker('{stem}.ok').markerFor('stock.csv')).toBe('stock.ok');
    expect(compileMarker('READY').markerFor('stock.csv')).toBe('READY');
  });

  it('recognises marker files so they are never read as exports', () => {
    const m = compileMarker('{name}.done');
    expect(m.isMarker('stock.csv.done')).toBe(true);
    expect(m.isMarker('stock.csv')).toBe(false);
    expect(compileMarker('READY').isMarker('READY')).toBe(true);
    expect(compileMarker('READY').shared).toBe(true);
  });

  it('refuses unknown placeholders and templates without a fixed part', () => {
    expect(() => compileMarker('{date}.done')).toThrow(/placeholder/);
    expect(() => compileMarker('{name}')).toThrow(/fixed part/);
    expect(watchConfigSchema.safeParse({ path: '/in', marker: '{name}' }).success).toBe(false);
  });
});

describe('watch config', () => {
  it('fills defaults with units', () => {
    expect(watchConfigSchema.parse({ path: '/in' })).toEqual({
      path: '/in',
      include: [],
      ignore: [],
      settle_ms: 2000,
      poll_interval_ms: 1000,
      polling: false,
      follow_symlinks: false,
      after: 'move',
      processed_dir: 'processed',
      failed_dir: 'failed',
      retention_days: 30,
    });
  });

  it('refuses unknown keys and folder patterns', () => {
    expect(watchConfigSchema.safeParse({ path: '/in', settle: 5 }).success).toBe(false);
    expect(watchConfigSchema.safeParse({ path: '/in', include: ['sub/*.csv'] }).success).toBe(false);
  });
});
