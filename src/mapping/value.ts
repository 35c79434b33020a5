import { ConnectorError } from '../errors.js';

/** A value on its way through a field's transforms; '' and null both mean empty. */
export type Value = string | number | boolean | null | string[];

/** True for '', null and []. */
export function isEmpty(v: Value): boolean {
  return v === '' || v === null || (Array.isArray(v) && v.length === 0);
}

/** Text of a value for string transforms and messages. */
export function asText(v: Value): string {
  if (v === null) return '';
  if (Array.isArray(v)) return v.join('|');
  return typeof v === 'string' ? v : String(v);
}

/** One row's value could not be mapped; becomes a row error (never escapes the mapper). */
export class ValueError extends ConnectorError {
  constructor(
    code: 'TRANSFORM_FAILED' | 'PRECISION_LOST' | 'INVALID_BOOLEAN',
    message: string,
    readonly value: string,
  ) {
    super(code, message, { action: 'reject' });
    this.name = 'ValueError';
  }
}
