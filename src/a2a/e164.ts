/** E.164: a plus, a non-zero country digit, at most fifteen digits in all. */
const E164 = /^\+[1-9]\d{1,14}$/;

/** True when `to` is an E.164 number as sent on the wire (no spaces or dashes). */
export function isE164(to: string): boolean {
  return E164.test(to);
}

/** The E.164 form of a number typed by a person (`+81 90-1234-5678`), or undefined when it is not one. */
export function normalizeE164(input: string): string | undefined {
  const compact = input.trim().replace(/[\s\-().]/g, '');
  return isE164(compact) ? compact : undefined;
}
