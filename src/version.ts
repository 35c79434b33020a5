import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** This build's version, from package.json beside dist/ ("0.0.0" when it cannot be read). */
export function connectorVersion(): string {
  if (cached === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
      cached = pkg.version ?? '0.0.0';
    } catch {
      cached = '0.0.0';
    }
  }
  return cached;
}
