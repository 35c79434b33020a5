import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { runAction } from '../context.js';

/** `schema`: print (or write) the JSON Schema of connector.yaml, generated from the zod schema. */
export function register(program: Command): void {
  program
    .command('schema')
    .description('print the JSON Schema of connector.yaml (for editors); the shipped copy is config/connector.schema.json')
    .option('-o, --out <file>', 'write to this file instead of stdout')
    .action(
      runAction(async (opts: { out?: string }) => {
        const { configJsonSchemaText } = await import('../../config/json-schema.js');
        const text = configJsonSchemaText();
        if (opts.out) await writeFile(opts.out, text);
        else process.stdout.write(text);
      }),
    );
}
