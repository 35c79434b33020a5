import type { Command } from 'commander';
import { registerPauseAction, whoRuns } from './pause-action.js';

/** `pause <dataset>`: stop taking exports for the dataset (they wait in the folder) until `resume`; the daemon notices it from the state db. */
export function register(program: Command): void {
  registerPauseAction(program, 'pause', 'stop taking exports for a dataset (files wait in the folder) until resume; the running daemon notices it, no restart', (engine, ds, feed) => {
    const p = engine.pause(ds, `pause by ${whoRuns()}`, feed);
    const since = new Date(p.at).toISOString();
    if (feed !== undefined) {
      return {
        text: `${ds.name}: feed ${feed} paused since ${since} (${p.by}); its exports wait in its folder until dataset-connector resume ${ds.name} --feed ${feed} (the other feeds go on)`,
        json: { dataset: ds.name, feed, paused: true, since, by: p.by },
      };
    }
    return {
      text: `${ds.name}: paused since ${since} (${p.by}); exports wait in the folder until dataset-connector resume ${ds.name}`,
      json: { dataset: ds.name, paused: true, since, by: p.by },
    };
  });
}
