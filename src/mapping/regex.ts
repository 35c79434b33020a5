import { z } from 'zod';

/** A string that compiles as a Unicode regular expression (config patterns). */
export const regexString = z.string().refine(
  (s) => {
    try {
      new RegExp(s, 'u');
      return true;
    } catch {
      return false;
    }
  },
  { message: 'not a valid regular expression' },
);
