import type { Dataset } from '../../api/wire.js';
import { ConnectorError } from '../../errors.js';
import type { OurRecords } from '../../snapshot/rebuild.js';
import type { RebuildReport, ServerIdentity } from '../../snapshot/types.js';
import type { ExecContext } from './context.js';
import { checkpoint } from './interrupt.js';
import { event } from '../../log/events.js';

/** What the server holds now, and whether the snapshot was rebuilt to match it. */
export interface ServerView {
  dataset: Dataset;
  etag: string;
  rebuilt: RebuildReport | null;
}

/**
 * Compare the snapshot with the server's active version (A25) and rebuild it
 * from `GET /records` (A7) when they differ: first run, a foreign publish, a
 * 412, the settings naming another server dataset (D7 of review rv18b). A
 * publish during the read (the page ETag moves, A8) restarts it.
 * `ours`: records of a change of ours that a person published (not foreign edits).
 */
export async function reconcile(ctx: ExecContext, force = false, ours?: OurRecords): Promise<ServerView> {
  const moved = serverMoved(ctx, ctx.store.state().activeVersion !== null);
  for (let attempt = 0; attempt < 3; attempt++) {
    const { value: ds } = await ctx.client.getDataset();
    const info = ctx.store.state();
    const etag = `"v${ds.active_version}"`;
    if (!force && !moved && info.activeVersion === ds.active_version) return { dataset: ds, etag, rebuilt: null };
    const rebuild = ctx.store.beginRebuild(serverOf(ctx));
    let published = false;
    try {
      for await (const page of ctx.client.listRecordPages()) {
        checkpoint(ctx); // reads only: stopping here leaves the snapshot as it was
        if (page.etag !== null && page.etag !== etag) {
          published = true;
          break;
        }
        rebuild.add(page.records);
      }
    } catch (err) {
      rebuild.abort();
      throw err;
    }
    if (published) {
      rebuild.abort();
      force = true;
      continue;
    }
    const report = rebuild.commit(ds.active_version, etag, ours);
    ctx.logger.info(
      event('reconcile.done', { firstRun: info.activeVersion === null, version: ds.active_version, ...report, foreignEdits: report.foreignEdits.length }),
      'snapshot rebuilt from the server',
    );
    for (const fe of report.foreignEdits.slice(0, 50)) {
      ctx.logger.warn(
        event('reconcile.drift', { kind: 'foreign_edit', record_id: fe.record_id, fields: fe.fields, resolution: ctx.policy.on_foreign_edit }),
        'a record the connector owns was edited on the server',
      );
    }
    return { dataset: ds, etag, rebuilt: report };
  }
  throw new ConnectorError('SERVER_BUSY_PUBLISHING', 'The dataset kept changing while it was read; trying again later.', {
    action: 'retry',
    context: { dataset: ctx.dataset },
  });
}

function serverOf(ctx: ExecContext): ServerIdentity {
  return { baseUrl: ctx.client.baseUrl, datasetId: ctx.client.datasetId };
}

/**
 * Whether the settings now name another server dataset than the one the
 * snapshot mirrors (D7 of review rv18b): its version number says nothing about
 * this one's records. A snapshot without a named server (a database from
 * before migration 20) takes the current one as it is.
 */
function serverMoved(ctx: ExecContext, confirmed: boolean): boolean {
  const now = serverOf(ctx);
  const was = ctx.store.server();
  if (was === null) {
    if (confirmed) ctx.store.setServer(now);
    return false;
  }
  if (was.baseUrl === now.baseUrl && was.datasetId === now.datasetId) return false;
  ctx.logger.warn(
    event('reconcile.server_changed', { from: `${was.baseUrl} ${was.datasetId}`, to: `${now.baseUrl} ${now.datasetId}` }),
    `the settings of dataset ${ctx.dataset} now name another server dataset (api.base_url or api.dataset_id changed): its snapshot is rebuilt from the server`,
  );
  return true;
}
