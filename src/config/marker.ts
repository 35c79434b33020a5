import { extname } from 'node:path';
import { ConnectorError } from '../errors.js';

/** A marker setting, compiled: which marker a file needs, and which names are markers. */
export interface Marker {
  /** Base name of the marker that gates `exportName`. */
  markerFor(exportName: string): string;
  /** True when `name` is a marker file (never an export). */
  isMarker(name: string): boolean;
  /** True when one marker gates every file of the folder (no placeholder). */
  readonly shared: boolean;
}

const PLACEHOLDER = /\{([a-z]*)\}/g;

/**
 * Compile a marker template: `{name}` is the export's file name, `{stem}` its
 * name without the extension; a template without placeholders is a fixed flag file.
 */
export function compileMarker(template: string): Marker {
  const names = [...template.matchAll(PLACEHOLDER)].map((m) => m[1]);
  const bad = names.find((n) => n !== 'name' && n !== 'stem');
  if (bad !== undefined) {
    throw new ConnectorError('CONFIG_INVALID', `unknown marker placeholder {${bad}}`, {
      action: 'stop',
      context: { setting: 'watch.marker' },
    });
  }
  if (template.replace(PLACEHOLDER, '') === '') {
    throw new ConnectorError('CONFIG_INVALID', 'a marker needs a fixed part, e.g. "{name}.done"', {
      action: 'stop',
      context: { setting: 'watch.marker' },
    });
  }
  const parts = template.split(PLACEHOLDER);
  // split() with one capture group alternates literal, placeholder, literal, …
  const pattern = parts
    .map((p, i) => (i % 2 === 1 ? '.+' : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  const re = new RegExp(`^${pattern}$`, 'su');
  return {
    shared: names.length === 0,
    markerFor(exportName) {
      const stem = exportName.slice(0, exportName.length - extname(exportName).length);
      return template.replace(PLACEHOLDER, (_, n: string) => (n === 'name' ? exportName : stem));
    },
    isMarker: (name) => re.test(name),
  };
}
