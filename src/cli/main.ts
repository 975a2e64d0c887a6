#!/usr/bin/env node
// The hugot-stream command line.
import { Command } from 'commander';
import { checkConnections, describeConnections } from '../connectors/connection-checks.ts';
import { loadConfigFile } from '../config/load-config.ts';
import { HugotError } from '../errors.ts';
import { findModelFolders } from '../models/model-folder.ts';
import { redactText } from '../redaction.ts';
import { createCliLogger } from './logger.ts';
import { runWorker } from './run-command.ts';

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
    .description('run the stream worker described by a config file')
    .option('-c, --config <file>', 'YAML config file', 'config/demo.yaml')
    .action(async (options: { config: string }) => {
      const config = await loadConfigFile(options.config);
      checkConnections(config);
      process.exitCode = await runWorker(config, createCliLogger(), (text) =>
        process.stderr.write(text),
      );
    });

  program
    .command('validate-config')
    .description('check a config file (fields, references, environment variables) and exit')
    .argument('<file>', 'YAML config file')
    .action(async (file: string) => {
      const config = await loadConfigFile(file);
      checkConnections(config);
      out(
        `${file} is valid: ${Object.keys(config.models).length} model(s), ${Object.keys(config.pipelines).length} pipeline(s), ${config.routes.length} route(s), delivery ${config.delivery.mode}\n`,
      );
      for (const line of describeConnections(config)) out(`  connection: ${line}\n`);
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
  try {
    await cli.parseAsync(process.argv);
  } catch (err) {
    // Configuration and model-folder errors already say what is wrong and how to fix it.
    // Scrubbed: an error from a client library may quote a connection string with its password.
    process.stderr.write(
      `hugot-stream: ${redactText(err instanceof HugotError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`,
    );
    process.exitCode = 2;
  }
}
