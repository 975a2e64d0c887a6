#!/usr/bin/env node
// The hugot-stream command line. `run` and `validate-config` arrive with the stream worker; until
// then they say so and exit non-zero rather than pretend.
import { Command } from 'commander';
import { findModelFolders } from '../models/model-folder.ts';

const DEFAULT_MODEL_ROOTS = ['models', 'test/fixtures/models', '.cache/models'];

export function buildCli(out: (text: string) => void): Command {
  const program = new Command('hugot-stream')
    .description(
      'Run Hugging Face transformer pipelines (ONNX) over Kafka, BullMQ, Redis Streams and JSONL files.',
    )
    .showHelpAfterError()
    .configureOutput({ writeOut: out, writeErr: out });

  program
    .command('run')
    .description('run the stream worker described by a config file (not implemented yet)')
    .option('-c, --config <file>', 'YAML config file')
    .action(() => {
      program.error('`run` is not implemented yet: the stream worker is still being built.', {
        exitCode: 2,
      });
    });

  program
    .command('validate-config')
    .description('check a config file and exit (not implemented yet)')
    .argument('<file>', 'YAML config file')
    .action(() => {
      program.error('`validate-config` is not implemented yet.', { exitCode: 2 });
    });

  const models = program.command('models').description('inspect model folders');
  models
    .command('list')
    .description('list Optimum-style model folders with their ONNX files and labels')
    .argument('[roots...]', 'folders to search', DEFAULT_MODEL_ROOTS)
    .action(async (roots: string[]) => {
      const found = await findModelFolders(roots);
      if (found.length === 0) out(`no model folders under ${roots.join(', ')}\n`);
      for (const m of found) {
        const labels = m.labels.length > 0 ? ` labels=${m.labels.length}` : '';
        const tokenizer = m.hasTokenizer ? '' : ' (no tokenizer.json)';
        out(
          `${m.path}  ${m.modelType}  ${m.onnxFiles.join(',') || '(no .onnx)'}${labels}${tokenizer}\n`,
        );
      }
    });

  return program;
}

if (import.meta.main) {
  const cli = buildCli((text) => process.stdout.write(text));
  if (process.argv.length <= 2) cli.help();
  await cli.parseAsync(process.argv);
}
