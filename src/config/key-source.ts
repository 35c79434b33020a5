import { z } from 'zod';

/**
 * Where a dataset key comes from. The key itself never sits in the YAML.
 * When several are given they are tried in order of preference:
 * systemd credential, then file, then environment variable.
 */
export const keySourceSchema = z
  .strictObject({
    credential: z
      .string()
      .min(1)
      .regex(/^[^/]+$/, 'a credential name, without a slash (the file under $CREDENTIALS_DIRECTORY)')
      .optional()
      .describe('Name of a systemd credential (LoadCredential=NAME:/path); read from $CREDENTIALS_DIRECTORY/NAME.'),
    file: z
      .string()
      .min(1)
      .optional()
      .describe('Absolute path of a file holding only the key; it must not be readable by group or others (chmod 600).'),
    env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name such as SHOP1_KEY')
      .optional()
      .describe('Name of an environment variable holding the key.'),
  })
  .refine((k) => k.credential !== undefined || k.file !== undefined || k.env !== undefined, {
    message: 'expected at least one of credential, file or env',
  })
  .meta({ id: 'KeySource' })
  .describe('Where the dataset key (tbd_live_…) is read from: credential, file and/or env, tried in that order.');

export type KeySource = z.infer<typeof keySourceSchema>;

/** Shorthand accepted by the normalise step: `key: "env:SHOP1_KEY"`, `"file:/etc/…"`, `"credential:shop-1-key"`. */
export const KEY_SHORTHAND = /^(credential|file|env):(.+)$/;
