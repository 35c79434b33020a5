import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCall } from '../../src/a2a/conversation.js';
import { RPC_NUMBER_OF, DOCUMENT_ERROR_CODES } from '../../src/a2a/wire.js';
import { A2aEmulator, a2aRequestHandler } from '../../src/emulator/a2a/index.js';
import { ERRORS } from '../../src/emulator/a2a/rpc.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { ALICE_KEY, clientFor, N, SCRIPTS, startEmu } from './helpers.js';

describe('A2A emulator', () => {
  let emu: RunningA2aEmulator;
  beforeAll(async () => {
    emu = await startEmu();
  });
  afterAll(async () => emu.close());

  it('uses the JSON-RPC numbers the client assumes (A29) for every document code', () => {
    expect(Object.keys(ERRORS).sort()).toEqual([...DOCUMENT_ERROR_CODES].sort());
    expect(ERRORS).toEqual(RPC_NUMBER_OF);
  });

  it('serves the Agent Card only with a key, with capabilities.streaming true', async () => {
    const url = `${emu.url}/.well-known/agent-card.json`;
    expect((await request(url)).statusCode).toBe(401);
    const res = await request(url, { headers: { authorization: `Bearer ${ALICE_KEY}` } });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toMatchObject({ capabilities: { streaming: true } });
    expect((await clientFor(emu.url).fetchAgentCard()).capabilities.streaming).toBe(true);
  });

  it('refuses JSON-RPC without a key (401) and counts no credit', async () => {
    const before = emu.emulator.credits;
    const res = await request(emu.url, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}' });
    expect(res.statusCode).toBe(401);
    await res.body.dump();
    expect(emu.emulator.credits).toBe(before);
  });

  it('can be mounted under a path of another server (to share one server with the dataset API emulator)', async () => {
    const emulator = new A2aEmulator({ keys: { [ALICE_KEY]: 'alice' }, scripts: SCRIPTS });
    let base = '';
    const handle = a2aRequestHandler(emulator, '/a2a', () => base);
    const server = createServer((req, res) => {
      void handle(req, res).then((mine) => {
        if (!mine) res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = clientFor(`${base}/a2a`);
    expect((await client.fetchAgentCard()).url).toBe(`${base}/a2a`);
    const outcome = await runCall(client, { to: N.ask, goal: 'Offer a day' }, { answer: async () => 'Tuesday' });
    expect(outcome.state).toBe('completed');
    expect(emulator.credits).toBe(1);
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
});
