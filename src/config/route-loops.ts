// A route whose output or dead-letter destination is its own input feeds itself: a dead letter
// read back fails again and is dead-lettered again, so five bad records grew a topic to a quarter
// of a million in minutes (issue 34). Such a route can never be right, so it is a ConfigError.
import { resolve } from 'node:path';
import type { RouteConfig } from './schema.ts';

type Endpoint = RouteConfig['source'] | RouteConfig['sink'];

/** What a source or sink reads or writes, in words, or undefined where it cannot loop. */
function place(end: Endpoint): string | undefined {
  switch (end.type) {
    case 'kafka':
      return `Kafka topic '${end.topic}'`;
    case 'bullmq':
      return `BullMQ queue '${end.queue}'`;
    case 'redis-stream':
      return `Redis stream '${end.stream}'`;
    case 'file':
      // Standard input and standard output are not one place.
      return end.path === '-' ? undefined : `file ${resolve(end.path)}`;
    case 'bullmq-result':
      return undefined;
  }
}

export interface LoopProblem {
  field: string;
  line: string;
}

/** The route's sink and dlq that write where its source reads, each with what to change. */
export function routeLoopProblems(route: RouteConfig, at: string): LoopProblem[] {
  const input = place(route.source);
  if (input === undefined) return [];
  const problems: LoopProblem[] = [];
  if (place(route.sink) === input)
    problems.push({
      field: `${at}.sink`,
      line: `${at}.sink writes to the route's own input (${input}), so every output would be read and processed again; point the sink somewhere else`,
    });
  if (route.dlq !== undefined && place(route.dlq) === input)
    problems.push({
      field: `${at}.dlq`,
      line: `${at}.dlq sends dead letters to the route's own input (${input}), so every bad record would fail and come back forever; point dlq at another destination`,
    });
  return problems;
}
