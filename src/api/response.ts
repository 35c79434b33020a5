/** A successful answer, body parsed as JSON (null when empty). */
export interface HttpResponse {
  status: number;
  etag: string | null;
  /** A35: the server replayed an earlier answer for this Idempotency-Key. */
  replayed: boolean;
  body: unknown;
}
