import { z } from 'zod';

/**
 * Demo mode (config/demo.yaml, `npm start`): the daemon starts the embedded
 * emulator in-process, creates each dataset and its key there, and copies a
 * sample export into each watched folder. Never for a real shop.
 */
export const demoConfigSchema = z
  .strictObject({
    emulator_port: z
      .number()
      .int()
      .min(0)
      .max(65535)
      .default(8787)
      .describe('Port of the embedded emulator on 127.0.0.1; datasets should use base_url http://127.0.0.1:<port>'),
    sample_export_dir: z
      .string()
      .min(1)
      .optional()
      .describe('Folder whose files are copied into every watched folder at start, so a sync shows at once; a relative path is taken from the folder of the YAML file that sets it'),
  })
  .describe('Demo mode: embedded emulator, keys made up at start, state in a fresh temporary folder. Not for production.');

export type DemoConfig = z.infer<typeof demoConfigSchema>;
