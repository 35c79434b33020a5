import { createHash, type Hash } from 'node:crypto';
import { SourceError } from '../model/source-error.js';

/** Hashes and counts the bytes of a file as they stream past, refusing more than `maxBytes`. */
export class ByteMeter {
  private readonly hash: Hash = createHash('sha256');
  bytes = 0;

  constructor(
    private readonly file: string,
    private readonly maxBytes: number,
  ) {}

  add(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      throw new SourceError('LIMIT_FILE_BYTES', `${this.file}: larger than max_file_bytes (${this.maxBytes})`, {
        file: this.file,
        setting: 'limits.max_file_bytes',
      });
    }
    this.hash.update(chunk);
  }

  /** Hex SHA-256 of every byte added. */
  digest(): string {
    return this.hash.digest('hex');
  }
}
