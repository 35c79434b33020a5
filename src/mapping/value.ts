import { ConnectorError } from '../errors.js';

/** A value on its way through a field's transforms; '' and null both mean empty. */
export type Value = string | number | boolean | null | string[];

/** One compiled transform. */
export type Transform = (v: Value) => Value;

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

export type ValueErrorCode = 'TRANSFORM_FAILED' | 'PRECISION_LOST' | 'INVALID_BOOLEAN';

/** One row's value could not be mapped; becomes a row error (never escapes the mapper). */
export class ValueError extends ConnectorError {
  declare readonly code: ValueErrorCode;

  constructor(
    code: ValueErrorCode,
    message: string,
    readonly value: string,
    /** The column to blame when it is not the field's own (a template placeholder's). */
    readonly column?: string,
  ) {
    super(code, message, { action: 'reject' });
    this.name = 'ValueError';
  }
}
