// kafkajs 2.2.4's request queue re-arms its throttle check after every answer and every check,
// with the delay `throttledUntil - Date.now()` even when nothing is throttled and nothing is
// pending: throttledUntil is -1 then, so the delay is minus the epoch time, which Node runs after
// 1 ms (and Node 23+ warns about, TimeoutNegativeWarning). Each such check re-arms the next, so
// every connection that has had an answer wakes its event loop about a thousand times a second for
// the rest of its life (kafkajs issues #1704, #1751; an idle admin and producer: npm run
// bench:kafkajs-idle, docs/sources-and-sinks.md). The replacement arms nothing when there is
// nothing to check: a request that has to wait is pushed onto `pending`, and push() arms the check
// then. kafkajs has had no release since February 2023, so the method is replaced here, in memory,
// on the class's prototype: the installed package is untouched, and instances made before or after
// this runs use the replacement.
import { createRequire } from 'node:module';

/** The fields of kafkajs' RequestQueue the replaced method reads and writes. */
interface RequestQueueState {
  throttledUntil: number;
  pending: unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}

/** kafkajs' own interval for a pending request's next check (CHECK_PENDING_REQUESTS_INTERVAL). */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;
/** What Node turns a delay below 1 into. */
const NODE_MIN_DELAY_MS = 1;
const INSTALLED = Symbol.for('hugot.kafkajs.clampedThrottleCheck');

/** kafkajs' scheduleCheckPendingRequests, armed only when a request waits or a throttle runs. */
function scheduleCheckPendingRequests(this: RequestQueueState): void {
  if (this.throttleCheckTimeoutId) return;
  let delay = this.throttledUntil - Date.now();
  if (delay <= 0) {
    if (this.pending.length === 0) return;
    delay = CHECK_PENDING_REQUESTS_INTERVAL_MS;
  }
  this.throttleCheckTimeoutId = setTimeout(
    () => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    },
    Math.max(delay, NODE_MIN_DELAY_MS),
  );
}

/** Replaces the method once per process; false when kafkajs' queue is not where 2.2.4 has it. */
export function clampKafkajsThrottleCheck(): boolean {
  const require = createRequire(import.meta.url);
  let RequestQueue: { prototype: Record<string | symbol, unknown> } | undefined;
  try {
    RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as typeof RequestQueue;
  } catch {
    return false;
  }
  const prototype = RequestQueue?.prototype;
  if (prototype === undefined || typeof prototype['scheduleCheckPendingRequests'] !== 'function')
    return false;
  if (prototype[INSTALLED] !== true) {
    prototype['scheduleCheckPendingRequests'] = scheduleCheckPendingRequests;
    prototype[INSTALLED] = true;
  }
  return true;
}

clampKafkajsThrottleCheck();
