import { z } from 'zod';
import { isE164 } from '../a2a/e164.js';
import { keySourceSchema } from './key-source.js';

const e164 = z.string().refine(isE164, 'expected an E.164 number such as +81312345678 (no spaces or dashes)');

/** "HH:MM-HH:MM" in the alert's time zone; a range past midnight ("22:00-06:00") wraps. */
export const HOURS_RANGE = /^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-4]):([0-5]\d)$/;

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** `alerts.call`: one phone call to a person when a dataset needs them (issue 6). */
export const callAlertConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Place alert calls. Set false to keep the section (e.g. for allowed_numbers) without calls.'),
    to: e164.describe('Number to call (E.164). Each call places a real call and spends credits.'),
    key: keySourceSchema.describe('Where the A2A key (or account key) is read from: credential, file and/or env.'),
    base_url: z
      .url({ protocol: /^https?$/ })
      .describe('The call API endpoint ({base_url} of the A2A document); the Agent Card is at {base_url}/.well-known/agent-card.json.'),
    allowed_hours: z
      .string()
      .regex(HOURS_RANGE, 'expected "HH:MM-HH:MM", e.g. "08:00-20:00"')
      .default('08:00-20:00')
      .describe('Local hours in which alert calls may be placed; outside them an alert waits.'),
    timezone: z
      .string()
      .refine(isTimeZone, 'expected an IANA time zone such as Asia/Tokyo')
      .optional()
      .describe('Time zone of allowed_hours; defaults to the top-level timezone, else UTC.'),
    held_after_minutes: z
      .int()
      .min(0)
      .max(10_080)
      .default(60)
      .describe('Call when a change has been held for a person this long; 0 calls at the first check after the hold (checks run every minute).'),
    stopped_after_minutes: z
      .int()
      .min(1)
      .max(10_080)
      .default(60)
      .describe('Call when a dataset has been stopped by an authentication error this long.'),
    max_per_dataset_per_day: z
      .int()
      .min(1)
      .max(10)
      .default(1)
      .describe('At most this many alert calls per dataset in any 24 hours.'),
    patience_minutes: z
      .number()
      .positive()
      .max(60)
      .default(5)
      .describe(
        'How long the call service may keep an alert call waiting without going on (call_not_started to an answer, an answered question still shown, an ended task that cannot be reopened) before the connector cancels the call and logs it. `dataset-connector call` uses it too unless --patience-minutes is given.',
      ),
    allowed_numbers: z
      .array(e164)
      .optional()
      .describe('If set, the only numbers `dataset-connector call` may dial; `to` must be one of them.'),
  })
  .refine((c) => c.allowed_numbers === undefined || c.allowed_numbers.includes(c.to), {
    message: 'to must be one of allowed_numbers',
    path: ['to'],
  })
  .describe('Phone-call alerts through the call API. Off unless this section is present (and enabled).');

/** `alerts`: optional, off by default. */
export const alertsConfigSchema = z
  .strictObject({
    call: callAlertConfigSchema.optional(),
  })
  .describe('Alerts to a person. Nothing is ever approved from an alert.');

export type CallAlertConfig = z.infer<typeof callAlertConfigSchema>;
export type AlertsConfig = z.infer<typeof alertsConfigSchema>;
