import type { IncomingMessage, ServerResponse } from 'node:http';
import type { A2aEmulator } from './emulator.js';
import { readBody, sendJson as reply } from './http.js';
import { applyModesRequest, MODE_PRESETS, modesRequestSchema, modesView } from './modes.js';

const MAX_ADMIN_BODY_BYTES = 64 * 1024;

/**
 * Control routes of the A2A emulator below `{base_url}/__emulator` (the real
 * service has none): `GET /modes` shows the server behaviours and the
 * presets; `POST /modes` switches them (`{"presets": ["lag-after-answer"],
 * "tasks_get": false}`); `POST /release-first-events` lets held first events
 * go; `GET /calls` lists the calls placed (one credit each).
 */
export async function handleA2aAdmin(emulator: A2aEmulator, req: IncomingMessage, res: ServerResponse, route: string): Promise<boolean> {
  const method = req.method ?? 'GET';
  const body = await readJson(req);
  if (body === undefined) return reply(res, 400, { error: 'the body is not JSON' });
  const view = () => ({
    modes: modesView(emulator.modes),
    sse: emulator.sse,
    presets: Object.fromEntries(Object.entries(MODE_PRESETS).map(([name, p]) => [name, p.about])),
  });
  switch (`${method} ${route}`) {
    case 'GET /modes':
      return reply(res, 200, view());
    case 'POST /modes': {
      const parsed = modesRequestSchema.safeParse(body ?? {});
      if (!parsed.success) return reply(res, 400, { error: 'invalid modes', issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) });
      const next = applyModesRequest({ modes: emulator.modes, sse: emulator.sse }, parsed.data);
      emulator.modes = next.modes;
      emulator.sse = next.sse;
      return reply(res, 200, view());
    }
    case 'POST /release-first-events':
      emulator.releaseFirstEvents();
      return reply(res, 200, { released: true });
    case 'GET /calls':
      return reply(res, 200, {
        credits: emulator.credits,
        calls: emulator.calls.map((c) => ({ ...c, state: emulator.task(c.taskId)?.state, answers: emulator.task(c.taskId)?.answers ?? [] })),
      });
    default:
      return reply(res, 404, { error: `no admin route ${method} ${route}` });
  }
}

/** The JSON body, null when empty, undefined when not JSON (or too large). */
async function readJson(req: IncomingMessage): Promise<unknown> {
  try {
    const text = (await readBody(req, MAX_ADMIN_BODY_BYTES)).trim();
    return text === '' ? null : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}
