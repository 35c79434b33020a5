import { z } from 'zod';

/**
 * The record of a business dataset, the same for every kind of business, with
 * the constraints the project assumes (A6). Every module that makes, checks or
 * stores a record uses this one definition.
 */

export const RECORD_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
export const ATTRIBUTE_KEY_PATTERN = /^[A-Za-z0-9_]{1,64}$/;
export const MAX_ALIASES = 20;
export const MAX_ALIAS_LENGTH = 200;
export const MAX_ATTRIBUTES = 50;

export type AttributeValue = string | number | boolean | null;

export interface DatasetRecord {
  record_id: string;
  display_name: string;
  api_value: string;
  aliases: string[];
  attributes: Record<string, AttributeValue>;
  active: boolean;
}

/** The fields a record has, in wire order. */
export const RECORD_FIELDS = ['record_id', 'display_name', 'api_value', 'aliases', 'attributes', 'active'] as const;
export type RecordField = (typeof RECORD_FIELDS)[number];

const attributeValue = z.union([z.string(), z.number().finite(), z.boolean(), z.null()]);

/**
 * An object of attributes with every own key kept. z.record copies into a
 * plain object, where a key named `__proto__` (A6 allows it; a portal user can
 * make one) would set the prototype and be lost: a replace carrying such a
 * record over would drop it. The object is passed on as it is, each entry checked.
 */
export function attributesSchema<V>(value: z.ZodType<V>, key?: { pattern: RegExp; message: string }) {
  return z
    .custom<Record<string, V>>((v) => v !== null && typeof v === 'object' && !Array.isArray(v), { message: 'must be an object' })
    .superRefine((a, ctx) => {
      for (const [k, v] of Object.entries(a)) {
        if (key && !key.pattern.test(k)) ctx.addIssue({ code: 'custom', path: [k], message: key.message });
        if (!value.safeParse(v).success) ctx.addIssue({ code: 'custom', path: [k], message: 'must be a string, a finite number, true/false or null' });
      }
    });
}

/** A6, strict: what the server accepts. Unknown fields are refused (A34). */
export const recordSchema = z
  .object({
    record_id: z.string().regex(RECORD_ID_PATTERN, 'must be 1–128 characters of A-Z a-z 0-9 . _ : -'),
    display_name: z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    api_value: z.string().min(1, 'must not be empty').max(500, 'must be at most 500 characters'),
    aliases: z
      .array(z.string().max(MAX_ALIAS_LENGTH, `each alias must be at most ${MAX_ALIAS_LENGTH} characters`))
      .max(MAX_ALIASES, `at most ${MAX_ALIASES} aliases`)
      .default([]),
    attributes: attributesSchema(attributeValue, { pattern: ATTRIBUTE_KEY_PATTERN, message: 'attribute keys must be 1–64 characters of A-Z a-z 0-9 _' })
      .refine((a) => Object.keys(a).length <= MAX_ATTRIBUTES, `at most ${MAX_ATTRIBUTES} attributes`)
      .default({}),
    active: z.boolean().default(true),
  })
  .strict();

/** The fields a PATCH may carry (A33: each replaces the field whole). */
export const recordPatchSchema = recordSchema.omit({ record_id: true }).partial().strict();
export type RecordPatch = Partial<Omit<DatasetRecord, 'record_id'>>;

export interface RecordIssue {
  field: string;
  message: string;
}

/** Check a candidate record against A6; returns the record with defaults applied, or the issues. */
export function validateRecord(input: unknown): { ok: true; record: DatasetRecord } | { ok: false; issues: RecordIssue[] } {
  const result = recordSchema.safeParse(input);
  if (result.success) return { ok: true, record: result.data as DatasetRecord };
  return {
    ok: false,
    issues: result.error.issues.map((i) => ({ field: i.path.length ? i.path.join('.') : '(record)', message: i.message })),
  };
}
