// `hugot-stream models pull <repo>[@revision] --variant <v>`: the pull, its progress on standard
// error, and on standard output the snapshot folder and the commit to pin.
import { ConfigError } from '../errors.ts';
import { hubSettings } from '../hub/hub-settings.ts';
import { pullModel } from '../hub/pull.ts';
import { parseRepoSpec } from '../hub/repo-spec.ts';
import { VARIANTS } from '../hub/variants.ts';
import { pullProgress } from './pull-progress.ts';

export async function pullCommandAction(
  spec: string,
  options: { variant: string; concurrency: string },
  out: (text: string) => void,
  env: Record<string, string | undefined> = process.env,
  stream: NodeJS.WriteStream = process.stderr,
): Promise<void> {
  const request = parseRepoSpec(spec, 'repo');
  if (!VARIANTS.includes(options.variant))
    throw new ConfigError(`--variant ${options.variant}: use one of ${VARIANTS.join(', ')}`, {
      field: 'variant',
    });
  const concurrency = Number(options.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new ConfigError(`--concurrency ${options.concurrency}: a whole number of at least 1`, {
      field: 'concurrency',
    });
  const progress = pullProgress(stream);
  let pulled;
  try {
    pulled = await pullModel(
      { ...request, variant: options.variant },
      { settings: hubSettings(env), onEvent: progress.onEvent, concurrency },
    );
  } finally {
    progress.stop();
  }
  out(`${pulled.path}\n`);
  out(
    `  ${pulled.repo}@${pulled.revision} is commit ${pulled.commit} (${pulled.variant}: ${pulled.graphs.join(', ')})${pulled.cached ? ', already cached' : ''}\n`,
  );
  if (pulled.revision !== pulled.commit)
    out(
      `  pin it: model: { hub: ${pulled.repo}, revision: ${pulled.commit}, variant: ${pulled.variant} }\n`,
    );
}
