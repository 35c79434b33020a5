import type { Command } from 'commander';
import { registerPauseAction, whoRuns } from './pause-action.js';
import { refuseFeedOption } from '../feed-option.js';

/** `pause <dataset>`: stop taking exports for the dataset (they wait in the folder) until `resume`; the daemon notices it from the state db. */
export function register(program: Command): void {
  registerPauseAction(program, 'pause', 'stop taking exports for a dataset (files wait in the folder) until resume; the running daemon notices it, no restart', (engine, ds, feed) => {
    if (feed !== undefined) refuseFeedOption(ds, 'pause');
    const p = engine.pause(ds, `pause by ${whoRuns()}`, feed);
    const since = new Date(p.at).toISOString();
    const busy = engine.workingNow(ds);
    // The running sync reads the pause again right before publishing (publish.ts) and holds its staged change then.
    const running = busy
      ? `; ${busy.label} (pid ${busy.pid}) works on ${ds.name} right now (${busy.purpose}): it stops before publishing and holds its staged change (dataset-connector approve publishes it, discard drops it)`
      : '';
    if (feed !== undefined) {
      return {
        text: `${ds.name}: feed ${feed} paused since ${since} (${p.by}); its exports wait in its folder until dataset-connector resume ${ds.name} --feed ${feed} (the other feeds go on)${running}`,
        json: { dataset: ds.name, feed, paused: true, since, by: p.by, running: busy },
      };
    }
    return {
      text: `${ds.name}: paused since ${since} (${p.by}); exports wait in the folder until dataset-connector resume ${ds.name}${running}`,
      json: { dataset: ds.name, paused: true, since, by: p.by, running: busy },
    };
  });
}
