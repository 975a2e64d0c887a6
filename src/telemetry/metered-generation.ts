// Generation metrics seen from the caller's side: time to first token and tokens generated, by
// watching the events a route reads from the generative engine. Wraps the submitter a route
// uses, so the engine and the route need no hook of their own.
import type { GenerationSubmitter } from '../route/streamed-generation.ts';
import type { EngineEvent } from '../generative/engine-event.ts';

export interface GenerationMeter {
  firstToken(pipeline: string, seconds: number): void;
  tokens(pipeline: string, count: number): void;
}

export function meteredGeneration(
  engine: GenerationSubmitter,
  meter: GenerationMeter,
  pipeline: string,
  now: () => number = () => performance.now(),
): GenerationSubmitter {
  return {
    submit(input, options) {
      const submitted = now();
      const events = engine.submit(input, options);
      return {
        async *[Symbol.asyncIterator](): AsyncIterator<EngineEvent> {
          let tokens = 0;
          try {
            for await (const event of events) {
              if (event.type === 'token') {
                if (tokens === 0) meter.firstToken(pipeline, (now() - submitted) / 1000);
                tokens += 1;
              }
              yield event;
            }
          } finally {
            // Counted when the request ends, also when it failed or was cancelled midway.
            if (tokens > 0) meter.tokens(pipeline, tokens);
          }
        },
      };
    },
  };
}
