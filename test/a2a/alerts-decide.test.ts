import { describe, expect, it } from 'vitest';
import { alertsConfigSchema, decideAlerts, withinHours, type DatasetAlertStatus } from '../../src/alerts/alerts.js';
import type { AlertRules } from '../../src/alerts/decide.js';

const MIN = 60_000;
/** 2025-06-02 10:00 in Tokyo (01:00 UTC). */
const TEN_AM_TOKYO = Date.UTC(2025, 5, 2, 1, 0);

const rules: AlertRules = {
  enabled: true,
  allowed_hours: '08:00-20:00',
  timezone: 'Asia/Tokyo',
  held_after_minutes: 60,
  stopped_after_minutes: 30,
  max_per_dataset_per_day: 1,
};

const held = (dataset: string, minutesAgo: number): DatasetAlertStatus => ({
  dataset,
  held: { kind: 'guard', reason: '42% of records would be deleted (max_delete_ratio 0.2)', since: TEN_AM_TOKYO - minutesAgo * MIN },
  stopped: null,
});

describe('decideAlerts (pure)', () => {
  const none = new Map<string, number[]>();

  it('calls once a guard has held a change longer than held_after_minutes', () => {
    expect(decideAlerts([held('shop-1', 59)], none, TEN_AM_TOKYO, rules)).toEqual([]);
    const [d, ...rest] = decideAlerts([held('shop-1', 61)], none, TEN_AM_TOKYO, rules);
    expect(rest).toEqual([]);
    expect(d).toMatchObject({ dataset: 'shop-1', kind: 'held' });
    expect(d!.goal).toContain('dataset-connector approve shop-1');
    expect(d!.goal).toContain('42% of records would be deleted');
    expect(d!.goal).toContain('nothing can be approved or changed by phone');
  });

  it('an auth stop wins over a held change and has its own threshold', () => {
    const s: DatasetAlertStatus = { ...held('shop-1', 120), stopped: { code: 'UNAUTHORIZED', since: TEN_AM_TOKYO - 31 * MIN } };
    const [d] = decideAlerts([s], none, TEN_AM_TOKYO, rules);
    expect(d).toMatchObject({ kind: 'stopped' });
    expect(d!.goal).toContain('UNAUTHORIZED');
    expect(d!.goal).toContain('dataset-connector doctor');
    const young = { ...s, stopped: { code: 'UNAUTHORIZED', since: TEN_AM_TOKYO - 5 * MIN } };
    expect(decideAlerts([young], none, TEN_AM_TOKYO, rules)[0]!.kind).toBe('held');
  });

  it('at most max_per_dataset_per_day calls per dataset in any 24 hours', () => {
    const history = new Map([['shop-1', [TEN_AM_TOKYO - 23 * 60 * MIN]]]);
    expect(decideAlerts([held('shop-1', 120), held('shop-2', 120)], history, TEN_AM_TOKYO, rules).map((d) => d.dataset)).toEqual(['shop-2']);
    const dayOld = new Map([['shop-1', [TEN_AM_TOKYO - 24 * 60 * MIN - 1]]]);
    expect(decideAlerts([held('shop-1', 2000)], dayOld, TEN_AM_TOKYO, rules)).toHaveLength(1);
    expect(decideAlerts([held('shop-1', 120)], history, TEN_AM_TOKYO, { ...rules, max_per_dataset_per_day: 2 })).toHaveLength(1);
  });

  it('no call outside the allowed hours (local to the time zone), nor when disabled', () => {
    const ninePmTokyo = Date.UTC(2025, 5, 2, 12, 0);
    expect(decideAlerts([held('shop-1', 600)], none, ninePmTokyo, rules)).toEqual([]);
    expect(decideAlerts([held('shop-1', 600)], none, ninePmTokyo, { ...rules, timezone: 'UTC' })).toHaveLength(1);
    expect(decideAlerts([held('shop-1', 600)], none, TEN_AM_TOKYO, { ...rules, enabled: false })).toEqual([]);
  });

  it.each([
    ['08:00-20:00', '07:59', false],
    ['08:00-20:00', '08:00', true],
    ['08:00-20:00', '19:59', true],
    ['08:00-20:00', '20:00', false],
    ['22:00-06:00', '23:30', true],
    ['22:00-06:00', '05:59', true],
    ['22:00-06:00', '06:00', false],
    ['00:00-24:00', '23:59', true],
  ])('withinHours(%s) at %s → %s', (range, hhmm, expected) => {
    const [h, m] = hhmm.split(':').map(Number);
    const utc = Date.UTC(2025, 0, 15, h!, m!);
    expect(withinHours(utc, range, 'UTC')).toBe(expected);
  });
});

describe('alertsConfigSchema', () => {
  const base = { to: '+81312345678', key: { env: 'A2A_KEY' }, base_url: 'https://a2a.example.com/a2a' };

  it('fills defaults: 08:00-20:00, 60 minutes, one call per dataset per day, 5 minutes of patience', () => {
    expect(alertsConfigSchema.parse({ call: base }).call).toEqual({
      ...base,
      enabled: true,
      allowed_hours: '08:00-20:00',
      held_after_minutes: 60,
      stopped_after_minutes: 60,
      max_per_dataset_per_day: 1,
      patience_minutes: 5,
    });
    expect(alertsConfigSchema.safeParse({ call: { ...base, patience_minutes: 0 } }).success).toBe(false);
    expect(alertsConfigSchema.parse({})).toEqual({});
    // 0: call at the first check after a hold (the daemon checks every minute).
    expect(alertsConfigSchema.parse({ call: { ...base, held_after_minutes: 0 } }).call?.held_after_minutes).toBe(0);
  });

  it.each<[unknown, string]>([
    [{ call: { ...base, unknown_key: 1 } }, 'unknown key'],
    [{ sms: {} }, 'unknown section'],
    [{ call: { ...base, to: '03-1234-5678' } }, 'not E.164'],
    [{ call: { ...base, allowed_hours: '8-20' } }, 'hours without minutes'],
    [{ call: { ...base, timezone: 'Mars/Olympus' } }, 'unknown time zone'],
    [{ call: { ...base, key: {} } }, 'no key source'],
    [{ call: { ...base, allowed_numbers: ['+81399999999'] } }, 'to outside allowed_numbers'],
    [{ call: { ...base, held_after_minutes: -1 } }, 'negative minutes'],
    [{ call: { ...base, held_after_minutes: 1.5 } }, 'fractional minutes'],
    [{ call: { ...base, stopped_after_minutes: 0 } }, 'zero minutes for an auth stop'],
  ])('refuses %j (%s)', (input) => {
    expect(alertsConfigSchema.safeParse(input).success).toBe(false);
  });
});
