import { SourceError } from '../errors.js';
import { partName, type ZipEntryInfo } from './archive.js';

// Small entries compress well for honest reasons (a sheet of one repeated value); the ratio rule is for big ones.
const RATIO_MIN_BYTES = 1024 * 1024;

/**
 * Refuse a zip bomb before inflating anything: the total uncompressed size
 * and each large entry's compression ratio, as the central directory
 * declares them, must stay within the limits. (The archive reader holds
 * every entry to its declared size while inflating.)
 */
export function checkArchiveSizes(file: string, entries: readonly ZipEntryInfo[], limits: { max_uncompressed_bytes: number; max_compression_ratio: number }): void {
  let total = 0;
  for (const e of entries) {
    total += e.uncompressedBytes;
    const ratio = e.uncompressedBytes / Math.max(e.compressedBytes, 1);
    if (e.uncompressedBytes > RATIO_MIN_BYTES && ratio > limits.max_compression_ratio) {
      throw new SourceError(
        'ZIP_BOMB',
        `${file}: archive entry ${partName(e.name)} inflates ${Math.round(ratio)}× (${e.uncompressedBytes} bytes), beyond max_compression_ratio ${limits.max_compression_ratio}; refused as a possible zip bomb (if the export is genuine, raise limits.max_compression_ratio)`,
        { file, setting: 'limits.max_compression_ratio' },
      );
    }
  }
  if (total > limits.max_uncompressed_bytes) {
    throw new SourceError(
      'ZIP_BOMB',
      `${file}: archive inflates to ${total} bytes, beyond max_uncompressed_bytes ${limits.max_uncompressed_bytes}; refused as a possible zip bomb (if the export is genuine, raise limits.max_uncompressed_bytes)`,
      { file, setting: 'limits.max_uncompressed_bytes' },
    );
  }
}
