import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { createLogger, event, LOG_EVENTS, registerSecret, registeredSecrets, type LogFormat } from '../../src/log/index.js';
import { Secret } from '../../src/secret.js';

const CANARY = 'tbd_live_CANARY_7f3a9c2e51d4';

function capture(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe.each<LogFormat>(['json', 'pretty'])('createLogger (%s)', (format) => {
  it('never writes a registered key, wherever it hides', async () => {
    const out = capture();
    const secret = new Secret(CANARY);
    const log = createLogger({ format, destination: out.stream, secrets: [secret], colorize: false }).child({ dataset: 'shop-1' });
    log.info({ headers: { authorization: `Bearer ${CANARY}` } }, 'request');
    log.info({ note: `echo ${CANARY} back`, nested: { deeper: [CANARY] } }, `message with ${CANARY}`);
    log.error({ err: new Error(`failed with ${CANARY}`) }, 'failure');
    log.warn({ err: new ApiError({ status: 401, code: 'UNAUTHORIZED', message: `bad key ${CANARY}` }) }, 'api');
    log.info({ secret }, 'the Secret object itself');
    await new Promise((r) => setImmediate(r));
    const text = out.text();
    expect(text).toContain('[redacted]');
    expect(text).toContain('failure');
    expect(text).not.toContain(CANARY);
    expect(text).not.toContain('CANARY_7f3a');
  });

  it('scrubs secrets registered after the logger was made, and key-shaped strings', async () => {
    const out = capture();
    const log = createLogger({ format, destination: out.stream, colorize: false });
    registerSecret(new Secret('late-registered-secret-value'));
    log.info({ v: 'late-registered-secret-value', w: 'tbd_live_unregistered123', x: 'tba_live_account456' }, 'later');
    await new Promise((r) => setImmediate(r));
    const text = out.text();
    expect(text).not.toMatch(/late-registered-secret-value|tbd_live_unregistered|tba_live_account/);
    expect(text).toContain('later');
  });
});

describe('log lines', () => {
  it('are JSON with level label, a fixed msg, an event and numbers as fields', async () => {
    const out = capture();
    createLogger({ destination: out.stream }).child({ dataset: 'shop-1' }).info(event('sync.planned', { adds: 3, deletes: 1 }), 'sync planned');
    await new Promise((r) => setImmediate(r));
    const line = JSON.parse(out.text()) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'info', dataset: 'shop-1', event: 'sync.planned', adds: 3, deletes: 1, msg: 'sync planned' });
    expect(typeof line.time).toBe('string');
  });

  it('honours the level', async () => {
    const out = capture();
    const log = createLogger({ destination: out.stream, level: 'warn' });
    log.info('hidden');
    log.warn('shown');
    await new Promise((r) => setImmediate(r));
    expect(out.text()).not.toContain('hidden');
    expect(out.text()).toContain('shown');
  });

  it('event names follow area.what and are unique', () => {
    for (const name of LOG_EVENTS) expect(name).toMatch(/^[a-z0-9]+\.[a-z_]+$/);
    expect(new Set(LOG_EVENTS).size).toBe(LOG_EVENTS.length);
  });
});

describe('the secret registry', () => {
  it('holds one entry per value: a key read again (a new Secret with the same value) is not added again, and is still scrubbed', async () => {
    registerSecret(new Secret('tbd_live_REGISTRYCANARY_1'));
    const size = registeredSecrets().size;
    for (let i = 0; i < 50; i++) registerSecret(new Secret('tbd_live_REGISTRYCANARY_1'));
    expect(registeredSecrets().size).toBe(size);
    registerSecret(new Secret('another-registry-value'));
    expect(registeredSecrets().size).toBe(size + 1);
    const out = capture();
    createLogger({ destination: out.stream }).info({ v: 'another-registry-value' }, 'line');
    await new Promise((r) => setImmediate(r));
    expect(out.text()).not.toContain('another-registry-value');
  });
});
