import { ConnectorError } from '../errors.js';

/**
 * An API error the emulator answers with: HTTP status, code and details, sent
 * in the A1 shape `{"error": {"code", "message", "details"}}`.
 */
export class EmulatorHttpError extends ConnectorError {
  readonly status: number;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    details: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(code, message, { action: 'reject', context: { status } });
    this.name = 'EmulatorHttpError';
    this.status = status;
    this.details = details;
    this.headers = headers;
  }

  /** A1 body. */
  body(): { error: { code: string; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

/** Shorthand for an error answer. */
export function httpError(
  status: number,
  code: string,
  message: string,
  details?: Record<string, unknown>,
  headers?: Record<string, string>,
): EmulatorHttpError {
  return new EmulatorHttpError(status, code, message, details, headers);
}

/** 422 VALIDATION_FAILED with A3 row errors or other details. */
export function validationFailed(message: string, details: Record<string, unknown> = {}): EmulatorHttpError {
  return new EmulatorHttpError(422, 'VALIDATION_FAILED', message, details);
}

/** Body-level validation issues (not rows) as `[{field, message}]`. */
export function zodIssues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): { field: string; message: string }[] {
  return error.issues.map((i) => ({ field: i.path.map(String).join('.') || '(body)', message: i.message }));
}
