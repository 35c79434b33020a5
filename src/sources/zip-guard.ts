import { open } from 'node:fs/promises';
import { SourceError } from './errors.js';

/** One archive entry as the zip central directory describes it. */
export interface ZipEntryInfo {
  name: string;
  compressedBytes: number;
  uncompressedBytes: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CD_ENTRY = 0x02014b50;
const MAX_CD_BYTES = 64 * 1024 * 1024;
const RATIO_MIN_BYTES = 1024 * 1024;

/** Read the central directory of a zip file (without inflating anything). */
export async function readZipDirectory(file: string): Promise<ZipEntryInfo[]> {
  const notZip = (why: string) => new SourceError('WRONG_FORMAT', `${file}: not a valid zip archive (${why}), so not an XLSX workbook`, { file, setting: 'type' });
  const fh = await open(file, 'r');
  try {
    const size = (await fh.stat()).size;
    const tailLen = Math.min(size, 22 + 65535);
    const tail = Buffer.alloc(tailLen);
    await fh.read(tail, 0, tailLen, size - tailLen);
    let at = -1;
    for (let i = tailLen - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === EOCD) {
        at = i;
        break;
      }
    }
    if (at < 0) throw notZip('no end of central directory');
    let count = tail.readUInt16LE(at + 10);
    let cdSize = tail.readUInt32LE(at + 12);
    let cdOffset = tail.readUInt32LE(at + 16);
    if ((count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) && at >= 20 && tail.readUInt32LE(at - 20) === ZIP64_LOCATOR) {
      const z64 = Buffer.alloc(56);
      await fh.read(z64, 0, 56, Number(tail.readBigUInt64LE(at - 20 + 8)));
      if (z64.readUInt32LE(0) !== ZIP64_EOCD) throw notZip('bad zip64 directory');
      count = Number(z64.readBigUInt64LE(32));
      cdSize = Number(z64.readBigUInt64LE(40));
      cdOffset = Number(z64.readBigUInt64LE(48));
    }
    if (cdSize > MAX_CD_BYTES || cdOffset + cdSize > size) throw notZip('central directory out of bounds');
    const cd = Buffer.alloc(cdSize);
    await fh.read(cd, 0, cdSize, cdOffset);
    const entries: ZipEntryInfo[] = [];
    let p = 0;
    for (let i = 0; i < count; i++) {
      if (p + 46 > cd.length || cd.readUInt32LE(p) !== CD_ENTRY) throw notZip('bad central directory entry');
      let compressedBytes = cd.readUInt32LE(p + 20);
      let uncompressedBytes = cd.readUInt32LE(p + 24);
      const nameLen = cd.readUInt16LE(p + 28);
      const extraLen = cd.readUInt16LE(p + 30);
      const commentLen = cd.readUInt16LE(p + 32);
      const name = cd.toString('utf8', p + 46, p + 46 + nameLen);
      // Zip64 extra field (0x0001) holds the real sizes when the 32-bit ones are saturated.
      for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen; ) {
        const id = cd.readUInt16LE(x);
        const len = cd.readUInt16LE(x + 2);
        if (id === 0x0001) {
          let q = x + 4;
          if (uncompressedBytes === 0xffffffff) (uncompressedBytes = Number(cd.readBigUInt64LE(q))), (q += 8);
          if (compressedBytes === 0xffffffff) compressedBytes = Number(cd.readBigUInt64LE(q));
        }
        x += 4 + len;
      }
      entries.push({ name, compressedBytes, uncompressedBytes });
      p += 46 + nameLen + extraLen + commentLen;
    }
    return entries;
  } finally {
    await fh.close();
  }
}

/**
 * Refuse a zip bomb before inflating anything: the total uncompressed size
 * and each large entry's compression ratio must stay within the limits. Also
 * refuses a zip that is not a workbook.
 */
export async function checkXlsxArchive(file: string, limits: { max_uncompressed_bytes: number; max_compression_ratio: number }): Promise<void> {
  const entries = await readZipDirectory(file);
  let total = 0;
  for (const e of entries) {
    total += e.uncompressedBytes;
    const ratio = e.uncompressedBytes / Math.max(e.compressedBytes, 1);
    if (e.uncompressedBytes > RATIO_MIN_BYTES && ratio > limits.max_compression_ratio) {
      throw new SourceError(
        'ZIP_BOMB',
        `${file}: archive entry ${e.name} inflates ${Math.round(ratio)}× (${e.uncompressedBytes} bytes), beyond max_compression_ratio ${limits.max_compression_ratio}; refused as a possible zip bomb`,
        { file, setting: 'limits.max_compression_ratio' },
      );
    }
  }
  if (total > limits.max_uncompressed_bytes) {
    throw new SourceError(
      'ZIP_BOMB',
      `${file}: archive inflates to ${total} bytes, beyond max_uncompressed_bytes ${limits.max_uncompressed_bytes}; refused as a possible zip bomb`,
      { file, setting: 'limits.max_uncompressed_bytes' },
    );
  }
  if (!entries.some((e) => e.name === 'xl/workbook.xml')) {
    throw new SourceError('WRONG_FORMAT', `${file}: a zip archive without xl/workbook.xml, so not an XLSX workbook`, { file, setting: 'type' });
  }
}
