import { describe, expect, it } from 'vitest';
import { validateRecord } from '../../src/model/record.js';
import { canonicalJson } from '../../src/model/canonical.js';
import { Secret, redactText } from '../../src/secret.js';
import { inspect } from 'node:util';

describe('record (A6)', () => {
  it('applies defaults to a minimal valid record', () => {
    const r = validateRecord({ record_id: 'A-1', display_name: 'Apple', api_value: 'apple' });
    expect(r).toEqual({
      ok: true,
      record: { record_id: 'A-1', display_name: 'Apple', api_value: 'apple', aliases: [], attributes: {}, active: true },
    });
  });

  it.each([
    [{ record_id: 'has space', display_name: 'x', api_value: 'x' }, 'record_id'],
    [{ record_id: 'a'.repeat(129), display_name: 'x', api_value: 'x' }, 'record_id'],
    [{ record_id: 'a', display_name: '', api_value: 'x' }, 'display_name'],
    [{ record_id: 'a', display_name: 'x', api_value: 'v'.repeat(501) }, 'api_value'],
    [{ record_id: 'a', display_name: 'x', api_value: 'x', aliases: Array(21).fill('a') }, 'aliases'],
    [{ record_id: 'a', display_name: 'x', api_value: 'x', attributes: { 'bad-key': 1 } }, 'attributes.bad-key'],
    [{ record_id: 'a', display_name: 'x', api_value: 'x', attributes: { nested: { a: 1 } } }, 'attributes.nested'],
    [{ record_id: 'a', display_name: 'x', api_value: 'x', colour: 'red' }, '(record)'],
  ])('rejects %j at %s', (input, field) => {
    const r = validateRecord(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues.map((i) => i.field)).toContain(field);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[{"y":2,"z":1}]},"b":1}');
  });
});

describe('Secret', () => {
  const canary = 'tbd_live_CANARY_0123456789';
  it('never shows its value through JSON, String, inspect or error properties', () => {
    const s = new Secret(canary);
    const err = Object.assign(new Error('x'), { key: s });
    for (const text of [JSON.stringify({ s }), String(s), inspect(s), inspect(err), JSON.stringify(err)]) {
      expect(text).not.toContain('CANARY');
    }
    expect(s.reveal()).toBe(canary);
    expect(redactText(`Bearer ${canary}`, [s])).toBe('Bearer [redacted]');
  });
});
