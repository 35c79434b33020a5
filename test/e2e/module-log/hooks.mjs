// Module hooks: append the URL of each resolved module to the file named at registration.
import { appendFileSync } from 'node:fs';

let log;

export function initialize(data) {
  log = data?.log;
}

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (log) appendFileSync(log, `${r.url}\n`);
  return r;
}
