/**
 * File content as messages may show it. A message (log line, error, health
 * reason, alert call) never quotes more of a file than a bounded excerpt
 * (issue 11): a file that is not the export it claims to be (a link to a
 * password file, a key file) must not be copied into the logs, and bytes
 * from a file must not be able to forge log lines or reorder a terminal
 * (control characters, bidirectional overrides).
 */

// Control, format (bidi overrides, zero-width), line/paragraph separators and lone surrogates.
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
const UNSAFE_OR_QUOTE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}"\\]/gu;
const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '"': '\\"', '\\': '\\\\' };

function escapeChar(c: string): string {
  return SHORT[c] ?? `\\u{${c.codePointAt(0)!.toString(16).toUpperCase()}}`;
}

/** At most `maxChars` UTF-16 units of `text`, never splitting a surrogate pair, with … when cut. */
function cut(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = Math.max(0, maxChars - 1);
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** `text` in double quotes, cut to `maxChars` and escaped (quotes, backslashes, control and format characters). */
export function excerpt(text: string, maxChars = 60): string {
  return `"${cut(text, maxChars).replace(UNSAFE_OR_QUOTE, escapeChar)}"`;
}

/** Text that may carry file content (a parser's message, a name from an archive), cut and with control and format characters escaped. */
export function boundText(text: string, maxChars = 200): string {
  return cut(text, maxChars).replace(UNSAFE, escapeChar);
}

/** Names read from a file (header cells, sheet names), each as an excerpt, at most `maxNames` of them and `maxChars` in all. */
export function excerptList(names: readonly string[], maxNames = 30, maxChars = 400): string {
  const shown: string[] = [];
  let used = 0;
  for (const n of names) {
    const e = excerpt(n, 40);
    if (shown.length === maxNames || used + e.length > maxChars) break;
    shown.push(e);
    used += e.length + 2;
  }
  if (shown.length === 0) return names.length === 0 ? 'none' : '…';
  return shown.length < names.length ? `${shown.join(', ')}, … (${names.length} in all)` : shown.join(', ');
}
