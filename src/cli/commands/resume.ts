import type { Command } from 'commander';
import { registerPauseAction } from './pause-action.js';
import { refuseFeedOption } from '../feed-option.js';

/** `resume <dataset>`: take exports again after `pause`; the daemon takes the newest one waiting in the folder. */
export function register(program: Command): void {
  registerPauseAction(program, 'resume', 'take exports for a paused dataset again; the running daemon then takes the newest export waiting in the folder', (engine, ds, feed) => {
    // A pause row of the implicit feed (or of a feed no longer configured) can still be cleared; else --feed is refused there.
    if (feed !== undefined && !engine.status(ds).pausedFeeds.some((f) => f.feed === feed)) refuseFeedOption(ds, 'resume');
    const was = engine.resumeExports(ds, feed);
    if (feed !== undefined) {
      return {
        text: was ? `${ds.name}: feed ${feed} resumed (paused since ${new Date(was.at).toISOString()}); its exports are taken again` : `${ds.name}: feed ${feed} was not paused`,
        json: { dataset: ds.name, feed, paused: false, wasPaused: was !== null },
      };
    }
    return {
      text: was ? `${ds.name}: resumed (paused since ${new Date(was.at).toISOString()}); exports are taken again` : `${ds.name}: was not paused`,
      json: { dataset: ds.name, paused: false, wasPaused: was !== null },
    };
  });
}
