import { describe, expect, it } from 'vitest';
import { TerminalProgress } from '../../src/cli/progress.js';

function terminal(isTTY: boolean) {
  let text = '';
  return { out: { isTTY, write: (s: string) => (text += s) }, text: () => text };
}

function feed(p: TerminalProgress, ...lines: object[]): Promise<void> {
  return new Promise((resolve) => p.write(lines.map((l) => `${JSON.stringify(l)}\n`).join(''), () => resolve()));
}

// Issue 17: progress on long work, with the reason for a wait, drawn from the command's own log events.
describe('TerminalProgress', () => {
  it('shows rows read, requests sent of the changes planned, the job, and why it waits', async () => {
    const t = terminal(true);
    const p = new TerminalProgress(t.out);
    await feed(p, { level: 30, event: 'sync.planned', path: 'replace', source: 120_000, adds: 10, changes: 5, deletes: 0 });
    expect(p.line).toBe('120,000 rows read · path replace · 0 requests sent, 15 changes planned');
    const one = new TerminalProgress(terminal(true).out);
    await feed(one, { level: 30, event: 'sync.planned', path: 'per_record', source: 3, adds: 0, changes: 1, deletes: 0 });
    expect(one.line).toBe('3 rows read · path per_record · 0 requests sent, 1 change planned');
    await feed(p, { level: 20, event: 'api.request', path: '/api/v1/business-datasets/s/records', status: 202 });
    await feed(p, { level: 40, event: 'api.rate_limited', code: 'JOB_IN_PROGRESS', delay_ms: 4_000, msg: 'api request retried' });
    expect(p.line).toBe('120,000 rows read · path replace · 1 request sent, 15 changes planned · waiting 4.0 s: a job is in progress on the server');
    await feed(p, { level: 20, event: 'api.request', path: '/api/v1/business-datasets/s/jobs/job-7', status: 200 });
    expect(p.line).toBe('120,000 rows read · path replace · 2 requests sent, 15 changes planned · job job-7 running');
    await feed(p, { level: 20, event: 'api.waiting', wait_ms: 12_400, reason: 'rate_budget' });
    expect(p.line).toContain('waiting 12 s for the rate budget (api.rate_per_minute)');
    // Redrawn in place; a warning printed above it as text.
    expect(t.text()).toContain('\r\x1b[K120,000 rows read');
    expect(t.text()).toContain('warning: api request retried (JOB_IN_PROGRESS)\n');
    p.clear();
    expect(t.text().endsWith('\r\x1b[K')).toBe(true);
  });

  it('off a terminal: warnings only, no redrawn line', async () => {
    const t = terminal(false);
    const p = new TerminalProgress(t.out);
    await feed(p, { level: 30, event: 'sync.planned', path: 'per_record', source: 3, adds: 3 }, { level: 50, event: 'file.rejected', code: 'ROW_ERRORS', msg: 'bad rows' });
    expect(t.text()).toBe('error: bad rows (ROW_ERRORS)\n');
  });
});
