import type { z } from 'zod';

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  valueType?: z.ZodType;
  element?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Strip optional/default/nullable/pipe wrappers. */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let i = 0; i < 20; i++) {
    const d = defOf(s);
    const inner = d.innerType ?? (d.type === 'pipe' ? d.in : undefined);
    if (!inner) return s;
    s = inner;
  }
  return s;
}

/** The option names allowed by the object schema at `path`, or [] when it is not a known object. */
export function allowedKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let s: z.ZodType | undefined = unwrap(schema);
  for (const seg of path) {
    if (!s) return [];
    const d = defOf(s);
    if (d.type === 'object') s = d.shape?.[String(seg)];
    else if (d.type === 'record') s = d.valueType;
    else if (d.type === 'array') s = d.element;
    else return [];
    if (s) s = unwrap(s);
  }
  if (!s) return [];
  const d = defOf(s);
  return d.type === 'object' && d.shape ? Object.keys(d.shape).filter((k) => k !== '$schema') : [];
}
