/**
 * XLSX cell values → the text a CSV export of the same sheet would hold, so
 * that one mapping serves both formats. Numbers: JavaScript's shortest
 * round-trip form (4900000000000, 0.1, -3); dates (cells with a date format):
 * `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM:SS` when there is a time, as the wall
 * time shown in the sheet (no zone); booleans: TRUE/FALSE; formulas: their
 * cached result; errors: their text (#N/A); rich text: its plain text.
 */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return Number.isFinite(v) ? String(v) : '';
    case 'boolean':
      return v ? 'TRUE' : 'FALSE';
  }
  if (v instanceof Date) return dateText(v);
  const o = v as Record<string, unknown>;
  if (Array.isArray(o.richText)) return (o.richText as Array<{ text?: string }>).map((r) => r.text ?? '').join('');
  if ('formula' in o || 'sharedFormula' in o) return cellText(o.result);
  if ('error' in o) return String(o.error);
  if ('text' in o) return cellText(o.text);
  return '';
}

const pad = (n: number) => (n < 10 ? `0${n}` : String(n));

function dateText(d: Date): string {
  // exceljs gives the sheet's wall time as a UTC instant; float serials round to the second.
  const t = new Date(Math.round(d.getTime() / 1000) * 1000);
  if (Number.isNaN(t.getTime())) return '';
  const day = `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
  if (t.getUTCHours() === 0 && t.getUTCMinutes() === 0 && t.getUTCSeconds() === 0) return day;
  return `${day}T${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}`;
}
