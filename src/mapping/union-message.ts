import type { z } from 'zod';

/**
 * One issue of a union's branch as text that says where it is, for a union's
 * own message (zod reports a failed union as "Invalid input" at the union,
 * which names neither the option nor what is wrong with it).
 */
export function unionMessage(issue: z.core.$ZodIssue): string {
  const where = issue.path.map(String).join('.');
  const what = issue.code === 'unrecognized_keys' ? `unknown option${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue.message;
  return where === '' ? what : `${where}: ${what}`;
}

/**
 * The issues of the one branch of a union whose shape the input has, when
 * exactly one does: the others failed on the input's type at their root.
 */
export function matchingBranch(branches: readonly (readonly z.core.$ZodIssue[])[]): readonly z.core.$ZodIssue[] | null {
  const typed = branches.filter((issues) => !issues.every((i) => i.path.length === 0 && (i.code === 'invalid_type' || i.code === 'invalid_value')));
  return typed.length === 1 ? typed[0]! : null;
}
