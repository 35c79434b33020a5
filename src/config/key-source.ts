import { z } from 'zod';

/**
 * Where a dataset key comes from. The key itself never sits in the YAML.
 * When several are given they are tried in order of preference:
 * systemd credential, then file, then environment variable.
 */
export const keySourceSchema = z
  .strictObject(
    {
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
        .describe('File holding only the key; it must not be readable by group or others (chmod 600). A relative path is taken from the folder of the YAML file that sets it.'),
      env: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name such as SHOP1_KEY')
        .optional()
        .describe('Name of an environment variable holding the key.'),
    },
    {
      // A text here is a key pasted into the YAML (the shorthands were expanded before): never echo it.
      error: (iss) =>
        iss.code === 'invalid_type' && typeof iss.input === 'string'
          ? 'a key must not be written in the configuration (expected where to read it from): put the key in a file only the service user can read ' +
            '(chmod 600) and write key: { file: /etc/dataset-connector/keys/<name> }, or credential: <name> or env: <VARIABLE>; ' +
            'then remove it from this file, and reissue it in the portal if others could read the file'
          : undefined,
    },
  )
  .refine((k) => k.credential !== undefined || k.file !== undefined || k.env !== undefined, {
    message:
      'no key source given (expected at least one of credential: <systemd credential name>, file: </path/of/key/file> or env: <VARIABLE>, ' +
      'e.g. key: { file: /etc/dataset-connector/keys/shop-1 })',
  })
  .meta({ id: 'KeySource' })
  .describe('Where the dataset key (tbd_live_…) is read from: credential, file and/or env, tried in that order.');

export type KeySource = z.infer<typeof keySourceSchema>;

/** Shorthand accepted by the normalise step: `key: "env:SHOP1_KEY"`, `"file:/etc/…"`, `"credential:shop-1-key"`. */
export const KEY_SHORTHAND = /^(credential|file|env):(.+)$/;
