/**
 * Tool calls that wait for the user: each gets a fresh id (its turn tells
 * every client with a `confirm` event), and waits for the first `approve`
 * that names it, its timeout, or the reply's end. However it is decided,
 * `approved` tells every client, so each canvas closes its prompt.
 */
import {
  type ConfirmView,
  type Event,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import type { ToolOutcome } from "../tools/runner.ts";
import { log } from "../base/log.ts";

/** How a wait ended: an answer, no answer in time, or the reply ended first. */
export type Decision = "allow" | "deny" | "timeout" | "cancel";

/** What the approvals need. */
export interface ApprovalsOptions {
  emit: (event: Event) => void;
  /** How long a call waits for an answer. */
  timeoutMs: number;
}

interface Waiting {
  view: ConfirmView;
  /** `ref` is the deciding `approve`'s, carried on `approved`. */
  settle: (decision: Decision, ref?: Ref) => void;
}

/** The calls waiting for the user's answer. */
export class Approvals {
  readonly #options: ApprovalsOptions;
  readonly #waiting = new Map<string, Waiting>();

  /** Creates an empty set of waits. */
  constructor(options: ApprovalsOptions) {
    this.#options = options;
  }

  /** The call waiting now (the oldest, should there be several), or null. */
  get waiting(): ConfirmView | null {
    const first = this.#waiting.values().next();
    return first.done ? null : structuredClone(first.value.view);
  }

  /** A call that waits for its decision from now on; the signal's abort cancels the wait. */
  ask(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): { view: ConfirmView; decision: Promise<Decision> } {
    const call = crypto.randomUUID();
    const view: ConfirmView = { call, tool, args };
    if (signal.aborted) return { view, decision: Promise.resolve("cancel") };
    const { promise, resolve } = Promise.withResolvers<Decision>();
    const settle = (decision: Decision, ref?: Ref) => {
      if (!this.#waiting.delete(call)) return;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      log.info("tool call decided", { tool, decision });
      this.#options.emit({
        type: "approved",
        call,
        allow: decision === "allow",
        ...refField(ref),
      });
      resolve(decision);
    };
    const onAbort = () => settle("cancel");
    const timer = setTimeout(
      () => settle("timeout"),
      this.#options.timeoutMs,
    );
    signal.addEventListener("abort", onAbort, { once: true });
    this.#waiting.set(call, { view, settle });
    return { view, decision: promise };
  }

  /** The first answer for a waiting call (its `approved` carries the answer's ref); false when no call of that id waits. */
  answer(call: string, allow: boolean, ref?: Ref): boolean {
    const waiting = this.#waiting.get(call);
    if (!waiting) return false;
    waiting.settle(allow ? "allow" : "deny", ref);
    return true;
  }
}

/** What the model reads for a call the user did not allow. */
export function declinedOutcome(
  tool: string,
  decision: Exclude<Decision, "allow">,
  timeoutSeconds: number,
  durationMs: number,
): ToolOutcome {
  const content = decision === "timeout"
    ? `The user did not answer within ${timeoutSeconds} seconds whether to run ${tool}, so it was not run. Treat it as declined.`
    : `The user declined to run ${tool}: it was not run. Do not call it again for this request unless the user asks.`;
  return {
    content,
    bytes: 0,
    lines: 0,
    durationMs,
    status: decision === "timeout" ? "not approved in time" : "declined",
  };
}
