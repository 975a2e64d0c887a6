#!/usr/bin/env node
// The hugot-stream command line. Only commander is loaded up front: each command imports what it
// needs when it runs, so that --help and --version answer at once instead of after the worker's
// whole module graph (ONNX Runtime, the pipelines, the broker clients) has loaded.
import { Command, CommanderError } from 'commander';
import { packageVersion } from '../version.ts';

/** Kept here (not imported) so that --help does not load the Hub code; a unit test compares the two. */
export const VARIANT_NAMES = 'fp32, fp16, int8, uint8, quantized, q4, q4f16, bnb4';

const DEFAULT_MODEL_ROOTS = ['models', 'test/fixtures/models', '.cache/models'];

/** Usage errors exit with the code the docs give bad configuration (operations.md). */
export const USAGE_EXIT_CODE = 2;

type Write = (text: string) => void;

/** `out` takes what a command prints (results, --help, --version); `err` usage errors and their help. */
export function buildCli(out: Write, err: Write = out): Command {
  const program = new Command('hugot-stream')
    .description(
      'Run Hugging Face transformer pipelines (ONNX) over Kafka, BullMQ, Redis Streams and JSONL files.',
    )
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .showHelpAfterError()
    .configureOutput({ writeOut: out, writeErr: err })
    // Commander would call process.exit itself (code 1 for a usage error); the caller decides.
    .exitOverride();

  program
    .command('run')
    .description('run the stream worker described by a config file')
    .option('-c, --config <file>', 'YAML config file', 'config/demo.yaml')
    .action(async (options: { config: string }) => {
      const [{ loadConfigFile }, { createCliLogger }, { runWorker }] = await Promise.all([
        import('../config/load-config.ts'),
        import('./logger.ts'),
        import('./run-command.ts'),
      ]);
      // run reads the connections' secrets itself, once, before it starts anything.
      const config = await loadConfigFile(options.config);
      process.exitCode = await runWorker(config, createCliLogger(), (text) =>
        process.stderr.write(text),
      );
    });

  program
    .command('validate-config')
    .description('check a config file (fields, references, environment variables) and exit')
    .argument('<file>', 'YAML config file')
    .action(async (file: string) => {
      const [
        { loadConfigFile },
        { checkConnections, describeConnections },
        { checkModelFit },
        { describeHubModels },
        { hubSettings },
      ] = await Promise.all([
        import('../config/load-config.ts'),
        import('../connectors/connection-checks.ts'),
        import('../engine/model-fit.ts'),
        import('../worker/hub-models.ts'),
        import('../hub/hub-settings.ts'),
      ]);
      const config = await loadConfigFile(file);
      checkConnections(config);
      // Says what start-up would pull, fetching nothing; absent in offline mode is refused here too.
      const hubLines = await describeHubModels(config, hubSettings());
      // Folders exist, hold the graphs asked for and fit their tasks; no weight is loaded. A Hub
      // model not yet pulled has no folder: start-up checks it once it is pulled.
      const folders = Object.fromEntries(
        Object.entries(config.models).flatMap(([alias, m]) =>
          m.path === undefined ? [] : [[alias, { ...m, path: m.path }]],
        ),
      );
      await checkModelFit(folders, config.pipelines);
      out(
        `${file} is valid: ${Object.keys(config.models).length} model(s), ${Object.keys(config.pipelines).length} pipeline(s), ${config.routes.length} route(s), delivery ${config.delivery.mode}\n`,
      );
      for (const line of describeConnections(config)) out(`  connection: ${line}\n`);
      for (const line of hubLines) out(`  hub model: ${line}\n`);
    });

  const models = program
    .command('models')
    .description('inspect model folders, pull models from the Hub');
  models
    .command('pull')
    .description(
      'download one variant of a Hugging Face Hub repository into the Hub cache (HF_HUB_CACHE) and print its snapshot folder and commit',
    )
    .argument('<repo>', '<org>/<name>[@revision] (a branch, tag or commit; default main)')
    .option('--variant <variant>', `ONNX files to take: ${VARIANT_NAMES}`, 'fp32')
    .option('--concurrency <n>', 'files downloaded at once', '4')
    .action(async (spec: string, options: { variant: string; concurrency: string }) => {
      const { pullCommandAction } = await import('./pull-command.ts');
      await pullCommandAction(spec, options, out);
    });
  models
    .command('list')
    .description(
      'list model folders: their ONNX graphs in each variant with sizes, labels, the tasks they fit, and which are test fixtures',
    )
    .argument('[roots...]', 'folders to search', DEFAULT_MODEL_ROOTS)
    .action(async (roots: string[]) => {
      const [{ describeModelFolder, findModelFolders }, { TASK_NAMES, taskDefinition }] =
        await Promise.all([
          import('../models/model-folder.ts'),
          import('../pipelines/registry.ts'),
        ]);
      const tasks = new Map(TASK_NAMES.map((task) => [task, taskDefinition(task).needs]));
      const found = await findModelFolders(roots, tasks);
      if (found.length === 0) out(`no model folders under ${roots.join(', ')}\n`);
      for (const m of found) out(`${describeModelFolder(m).join('\n')}\n`);
    });

  return program;
}

/**
 * The exit code for what the command line threw: 0 after --help or --version, USAGE_EXIT_CODE for
 * a usage error (commander has already printed it and the help on stderr) or a failed start.
 */
export function exitCodeFor(thrown: unknown): number {
  if (thrown instanceof CommanderError) return thrown.exitCode === 0 ? 0 : USAGE_EXIT_CODE;
  return USAGE_EXIT_CODE;
}

/** Runs the command line on `argv` (process.argv: node, the script, then the arguments). */
export async function main(argv: readonly string[]): Promise<void> {
  const cli = buildCli(
    (text) => process.stdout.write(text),
    (text) => process.stderr.write(text),
  );
  if (argv.length <= 2) {
    // A bare `hugot-stream` is a usage error: the help goes where errors go.
    cli.outputHelp({ error: true });
    process.exitCode = USAGE_EXIT_CODE;
    return;
  }
  try {
    await cli.parseAsync(argv);
  } catch (err) {
    if (!(err instanceof CommanderError)) {
      // Configuration and model-folder errors already say what is wrong and how to fix it.
      // Scrubbed: an error from a client library may quote a connection string with its password.
      const [{ HugotError }, { redactText }] = await Promise.all([
        import('../errors.ts'),
        import('../redaction.ts'),
      ]);
      process.stderr.write(
        `hugot-stream: ${redactText(err instanceof HugotError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`,
      );
    }
    process.exitCode = exitCodeFor(err);
  }
}

if (import.meta.main) await main(process.argv);
