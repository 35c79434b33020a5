import fc from 'fast-check';
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { describe, expect, it } from 'vitest';
import { XmlScanner } from '../../src/sources/xlsx/xml-scan.js';

/**
 * Issue 18: the XLSX reader's own XML scanner (xml-scan.ts) replaced saxes for
 * speed. It must read what saxes reads, event for event, however the text is
 * cut into pieces, and refuse what saxes refuses: checked here against saxes
 * on generated parts and on mutations of them.
 */

type Event = string;

/** Events of a document read by saxes: opens with attributes, closes, and the text between them joined. */
function bySaxes(doc: string): Event[] | 'refused' {
  const out: Event[] = [];
  let text = '';
  const flush = () => {
    if (text !== '') out.push(`text ${JSON.stringify(text)}`);
    text = '';
  };
  const p = new SaxesParser({ xmlns: false, position: false });
  let failed = false;
  p.on('opentag', (t: SaxesTagPlain) => {
    flush();
    out.push(`open ${t.name} ${JSON.stringify(Object.entries(t.attributes))}`);
  });
  p.on('closetag', (t: SaxesTagPlain) => {
    flush();
    out.push(`close ${t.name}`);
  });
  p.on('text', (t) => (text += t));
  p.on('cdata', (t) => (text += t));
  p.on('error', () => (failed = true));
  try {
    p.write(doc);
    p.close();
  } catch {
    failed = true;
  }
  if (failed) return 'refused';
  // saxes reports whitespace outside the root as text; the scanner drops it (nothing reads it).
  return out.filter((e, i) => !(e.startsWith('text ') && (i === 0 || i === out.length - 1)));
}

function byScanner(doc: string, cuts: number[]): Event[] | 'refused' {
  const out: Event[] = [];
  let text = '';
  const flush = () => {
    if (text !== '') out.push(`text ${JSON.stringify(text)}`);
    text = '';
  };
  const s = new XmlScanner(
    {
      open(name, a) {
        flush();
        out.push(`open ${name} ${JSON.stringify(Object.entries(a))}`);
      },
      close(name) {
        flush();
        out.push(`close ${name}`);
      },
      text: (t) => (text += t),
    },
    64,
    () => new Error('too deep'),
  );
  try {
    let at = 0;
    for (const c of [...cuts.filter((x) => x < doc.length).sort((a, b) => a - b), doc.length]) {
      s.write(doc.slice(at, c));
      at = c;
    }
    s.close();
  } catch {
    return 'refused';
  }
  return out;
}

const NAMES = ['worksheet', 'row', 'c', 'v', 'is', 't', 'x:c', 'x14ac:dyDescent', '_a', 'a.b-1'];
const ATTRS = ['r', 't', 's', 'spans', 'x14ac:dyDescent', 'xml:space'];
const TEXT = fc
  .array(fc.constantFrom('a', 'B', '1', ' ', '\n', '\r\n', '\r', '\t', '>', ']', ']]', 'é', '髙', '😀', '&amp;', '&lt;', '&gt;', '&quot;', '&apos;', '&#65;', '&#x1F600;', '&#13;', "'", '"'), { maxLength: 8 })
  .map((p) => p.join(''));

interface Node {
  name: string;
  attrs: Array<[string, string]>;
  kids: Array<Node | { text: string } | { cdata: string } | { comment: string }>;
}
const node: fc.Memo<Node> = fc.memo((d) =>
  fc.record({
    name: fc.constantFrom(...NAMES),
    attrs: fc.uniqueArray(fc.tuple(fc.constantFrom(...ATTRS), TEXT.map((t) => t.replace(/</g, ''))), { selector: (a) => a[0], maxLength: 3 }),
    kids: d > 1 ? fc.array(fc.oneof(node(d - 1), TEXT.map((text) => ({ text })), fc.constant({ cdata: 'x<y>&z' }), fc.constant({ comment: ' c ' })), { maxLength: 4 }) : fc.constant([]),
  }),
);

function render(n: Node): string {
  const attrs = n.attrs.map(([k, v]) => (v.includes('"') ? ` ${k}='${v.replace(/'/g, '&apos;')}'` : ` ${k}="${v}"`)).join('');
  if (n.kids.length === 0) return `<${n.name}${attrs}/>`;
  const inner = n.kids
    .map((k) => ('name' in k ? render(k) : 'text' in k ? k.text.replace(/]/g, '] ') : 'cdata' in k ? `<![CDATA[${k.cdata}]]>` : `<!--${k.comment}-->`))
    .join('');
  return `<${n.name}${attrs}>${inner}</${n.name} >`.replace(' >', '>');
}
const doc = node(4).map((n) => `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n${render(n)}\n`);
const cuts = fc.array(fc.nat(400), { maxLength: 6 });

describe('the XLSX XML scanner reads as saxes does', () => {
  it('well-formed parts: the same elements, attributes and text, however the text is cut', () => {
    fc.assert(
      fc.property(doc, cuts, (d, c) => {
        const want = bySaxes(d);
        expect(want).not.toBe('refused');
        expect(byScanner(d, c)).toEqual(want);
      }),
      { numRuns: 600 },
    );
  });

  it('long parts in long pieces: an element cut between two pieces, short or longer than a piece', () => {
    // Pieces as long as an inflated chunk, and text or an attribute held over several of them (issue 18).
    const long = fc.tuple(fc.array(node(3), { minLength: 1, maxLength: 6 }), fc.nat(9_000), fc.constantFrom('a', '&amp;', 'é')).map(([kids, n, unit]) => {
      const body = kids.map(render).join(`<t>${unit.repeat(n)}</t>`);
      return `<?xml version="1.0"?><root>${body.repeat(Math.ceil(20_000 / body.length))}<c r="${'A'.repeat(n)}"/></root>`;
    });
    fc.assert(
      fc.property(long, fc.array(fc.nat(60_000), { maxLength: 5 }), (d, c) => {
        const want = bySaxes(d);
        expect(want).not.toBe('refused');
        expect(byScanner(d, c)).toEqual(want);
      }),
      { numRuns: 150 },
    );
  });

  it('damaged parts: refused where saxes refuses, read alike where it reads them', () => {
    const damage = fc.tuple(doc, fc.nat(2000), fc.constantFrom('', '<', '>', '&', '"', "'", '/', '=', ' ', '!', '?', '\u0001', '</c>', '<c>', ']]>', '&bogus;', '&#0;', '<!--', '-->', '<![CDATA[', '<?pi x?>', '<?xml version="1.0"?>', '\r'), cuts, fc.boolean());
    fc.assert(
      fc.property(damage, ([d, at, insert, c, replace]) => {
        // Insert, or replace one character (delete it when the insert is empty); by code point, as a UTF-8 decoder gives no lone surrogates.
        const chars = Array.from(d);
        const i = at % (chars.length + 1);
        const bad = [...chars.slice(0, i), insert, ...chars.slice(replace ? i + 1 : i)].join('');
        expect(byScanner(bad, c)).toEqual(bySaxes(bad));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses a DOCTYPE (no workbook part has one; entity definitions are how XML bombs are made)', () => {
    expect(byScanner('<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>', [])).toBe('refused');
  });
});
