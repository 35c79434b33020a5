import { SourceError } from '../../model/source-error.js';
import type { ZipEntryInfo } from './archive.js';
import { partName } from './part-name.js';

// Small entries compress well for honest reasons (a sheet of one repeated value); the ratio rule is for big ones.
const RATIO_MIN_BYTES = 1024 * 1024;

/** The limits every compressed input is held to (XLSX parts, a .csv.gz, a CSV inside a .zip). */
export interface InflationLimits {
  max_uncompressed_bytes: number;
  max_compression_ratio: number;
}

/**
 * Refuse one compressed stream whose inflated size (declared, or counted so
 * far while inflating) is beyond the ratio limit to its compressed size.
 */
export function checkRatio(file: string, what: string, uncompressedBytes: number, compressedBytes: number, limits: InflationLimits): void {
  const ratio = uncompressedBytes / Math.max(compressedBytes, 1);
  if (uncompressedBytes > RATIO_MIN_BYTES && ratio > limits.max_compression_ratio) {
    throw new SourceError(
      'ZIP_BOMB',
      `${file}: ${what} inflates ${Math.round(ratio)}× (${uncompressedBytes} bytes), beyond max_compression_ratio ${limits.max_compression_ratio}; refused as a possible zip bomb (if the export is genuine, raise limits.max_compression_ratio)`,
      { file, setting: 'limits.max_compression_ratio' },
    );
  }
}

/** Refuse an archive or stream that inflates to more than max_uncompressed_bytes in all. */
export function checkTotal(file: string, what: string, totalBytes: number, limits: InflationLimits): void {
  if (totalBytes > limits.max_uncompressed_bytes) {
    throw new SourceError(
      'ZIP_BOMB',
      `${file}: ${what} inflates to ${totalBytes} bytes, beyond max_uncompressed_bytes ${limits.max_uncompressed_bytes}; refused as a possible zip bomb (if the export is genuine, raise limits.max_uncompressed_bytes)`,
      { file, setting: 'limits.max_uncompressed_bytes' },
    );
  }
}

/**
 * Refuse a zip bomb before inflating anything: the total uncompressed size
 * and each large entry's compression ratio, as the central directory
 * declares them, must stay within the limits. (The archive reader holds
 * every entry to its declared size while inflating.)
 */
export function checkArchiveSizes(file: string, entries: readonly ZipEntryInfo[], limits: InflationLimits): void {
  let total = 0;
  for (const e of entries) {
    total += e.uncompressedBytes;
    checkRatio(file, `archive entry ${partName(e.name)}`, e.uncompressedBytes, e.compressedBytes, limits);
  }
  checkTotal(file, 'archive', total, limits);
}
