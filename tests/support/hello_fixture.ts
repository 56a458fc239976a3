/** The greeting a daemon sends, for the tests that stand in for one or feed a client. */
import type { Event } from "../../src/protocol/protocol.ts";

/** A `hello` event, every field it may carry. */
export type Hello = Extract<Event, { type: "hello" }>;

/** A `hello` of an idle daemon with no conversation and nothing known yet (the fields it always carries), `extra` over it. */
export function idleHello(extra: Partial<Hello> = {}): Hello {
  return {
    type: "hello",
    state: "idle",
    model: null,
    ctx_used: null,
    ctx_max: null,
    ctx_sent: null,
    ctx_total: null,
    ctx_summarized: null,
    id: null,
    turns: [],
    pending: null,
    ...extra,
  };
}
