import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { readExportFile } from '../../src/sources/read.js';
import { ALWAYS_FOLLOW, NEVER_FOLLOW, hashFile } from '../../src/sources/open-file.js';
import { writeRejectFile } from '../../src/sources/reject-file.js';
import { SECRET, readText, secretOutside, simpleMapping, tempDir } from './helpers.js';

// Issue 11 point 6: the read never opens a link it was not allowed to follow, nor anything but a regular file.
const csv = sourceConfigSchema.parse({ type: 'csv' });
const mapping = mappingConfigSchema.parse(simpleMapping);

describe('reading through a link', () => {
  it('is refused by default (LINK_NOT_FOLLOWED) without a byte of the target in the message', async () => {
    const { inbox, secret } = await secretOutside();
    const link = join(inbox, 'stock.csv');
    await symlink(secret, link);
    const r = await readExportFile(link, csv, mapping);
    expect(r.rejected).toMatchObject({ code: 'LINK_NOT_FOLLOWED', action: 'reject', context: { file: link } });
    expect(r.rejected?.message).not.toContain('SECRET');
    expect(r.bytes).toBe(0);
    await expect(hashFile(link, NEVER_FOLLOW)).rejects.toMatchObject({ code: 'LINK_NOT_FOLLOWED' });
  });

  it('is followed for a path the operator named (ALWAYS_FOLLOW), and within the allowed folders only', async () => {
    const { inbox, outside } = await secretOutside();
    await mkdir(join(inbox, 'archive'));
    const real = join(inbox, 'archive', 'stock-0412.csv');
    await writeFile(real, 'SKU,Name,Code\nA-1,a,a\n');
    const link = join(inbox, 'stock.csv');
    await symlink(real, link);
    expect((await readExportFile(link, csv, mapping, { links: ALWAYS_FOLLOW })).records).toHaveLength(1);
    expect((await readExportFile(link, csv, mapping, { links: { follow: 'within', roots: [inbox] } })).records).toHaveLength(1);
    const out = await readExportFile(link, csv, mapping, { links: { follow: 'within', roots: [outside] } });
    expect(out.rejected?.code).toBe('LINK_NOT_FOLLOWED');
    expect(out.rejected?.message).toMatch(/leads out of the watch folder/);
  });

  it('a relative link that climbs out (../) is outside, whatever its text', async () => {
    const { inbox } = await secretOutside();
    const link = join(inbox, 'stock.csv');
    await symlink('../outside/passwd', link);
    const r = await readExportFile(link, csv, mapping, { links: { follow: 'within', roots: [inbox] } });
    expect(r.rejected?.code).toBe('LINK_NOT_FOLLOWED');
  });
});

describe('files that are not regular files', () => {
  it.skipIf(process.platform === 'win32')('a FIFO is refused without blocking the read (no writer ever comes)', async () => {
    const dir = await tempDir();
    const fifo = join(dir, 'stock.csv');
    execFileSync('mkfifo', [fifo]);
    for (const links of [NEVER_FOLLOW, ALWAYS_FOLLOW]) {
      const r = await readExportFile(fifo, csv, mapping, { links });
      expect(r.rejected).toMatchObject({ code: 'NOT_REGULAR_FILE' });
      expect(r.rejected?.message).toMatch(/named pipe/);
    }
    // A link to the FIFO, followed because the operator named it: still not opened.
    const link = join(dir, 'via-link.csv');
    await symlink(fifo, link);
    expect((await readExportFile(link, csv, mapping, { links: ALWAYS_FOLLOW })).rejected?.code).toBe('NOT_REGULAR_FILE');
  });

  it('a folder is refused', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'x.csv'));
    expect((await readExportFile(join(dir, 'x.csv'), csv, mapping)).rejected?.code).toBe('NOT_REGULAR_FILE');
  });
});

describe('messages quote a file only as a bounded, escaped excerpt of its header', () => {
  it('a file that is no export: its first line is cut and its control characters escaped', async () => {
    const long = `${'x'.repeat(500)}SECRET-TAIL`;
    const r = await readText(`\u001b[31m${SECRET}\u2028,${long}\n${SECRET}\n`);
    expect(r.rejected?.code).toBe('COLUMN_NOT_FOUND');
    const m = r.rejected!.message;
    expect(m).not.toMatch(/[\u0000-\u001f\u007f\u2028]/u);
    expect(m).toContain('\\u{1B}[31m');
    expect(m).not.toContain('SECRET-TAIL');
    expect(m.length).toBeLessThan(700);
  });

  it('a row error quoting a huge cell stays short', async () => {
    const r = await readText(`SKU,Name,Code\nA-1,a,${'9'.repeat(2000)}x\n`, {}, { fields: { ...simpleMapping.fields, 'attributes.n': { column: 'Code', transforms: ['number'] } } });
    expect(r.row_errors[0]?.reason.length).toBeLessThan(320);
  });

  it('a sheet name from a workbook is quoted escaped and cut', async () => {
    const { handMadeXlsx } = await import('./xlsx-parts.js');
    const dir = await tempDir();
    const file = join(dir, 'b.xlsx');
    await writeFile(file, handMadeXlsx({ sheets: [{ name: `\u202Egnp.exe${'n'.repeat(300)}`, rows: '' }] }));
    const r = await readExportFile(file, sourceConfigSchema.parse({ type: 'xlsx', sheet: 'Products' }), mapping);
    expect(r.rejected?.code).toBe('SHEET_NOT_FOUND');
    expect(r.rejected?.message).not.toMatch(/\u202E/u);
    expect(r.rejected?.message).toContain('\\u{202E}gnp.exe');
    expect(r.rejected!.message.length).toBeLessThan(400);
  });
});

describe('the reject file beside an export', () => {
  it('is never written through a link planted under its temporary name', async () => {
    const { inbox, secret } = await secretOutside();
    const file = join(inbox, 'stock.csv');
    await symlink(secret, join(inbox, `stock.rejected.csv.${process.pid}.tmp`));
    await writeRejectFile(file, [{ file, line: 2, column: 'SKU', value: 'x', reason: 'r', code: 'INVALID_RECORD' }]);
    expect(await readFile(secret, 'utf8')).toBe(`${SECRET}\n`);
    expect(await readFile(join(inbox, 'stock.rejected.csv'), 'utf8')).toContain('INVALID_RECORD');
  });
});
