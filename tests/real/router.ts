/**
 * The router's never-swap, through the daemon: a router serving two models
 * from a folder (`--models-dir`) with room for one at a time. With one
 * loaded the daemon answers with it and the other stays unloaded; with none
 * loaded it says so and loads nothing (naming a model would load it).
 */
import assert from "node:assert/strict";
import { reply } from "../support/fake_llm.ts";
import type { Received } from "../support/socket_client.ts";
import { type Backend, statuses } from "./backends.ts";
import { words } from "./replies.ts";
import { observe, type Scenario, turn } from "./scenario.ts";

async function routerCommand(
  backend: Backend,
  action: "load" | "unload",
  model: string,
): Promise<void> {
  const answer = await backend.json(`/models/${action}`, { model });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  await backend.modelStatus(model, action === "load" ? "loaded" : "unloaded");
}

const neverSwap: Scenario = {
  name:
    "the router: the loaded model answers, the other is never loaded, none loaded is no_model_loaded",
  real: {
    router: { "tiny-a": "shift", "tiny-b": "second" },
    args: ["--models-max", "1"],
  },
  fake: {
    options: {
      mode: "router",
      models: [
        { id: "tiny-a", status: "unloaded" },
        { id: "tiny-b", status: "unloaded" },
      ],
    },
    scripts: [reply({ content: words(40) })],
  },
  daemon: {
    config: "thinking = false\ncompact = false\n[request]\nmax_tokens = 16\n",
  },
  async run({ backend, client }) {
    const events: Received[] = [];
    const seen: Record<string, string>[] = [await statuses(backend)];
    await routerCommand(backend, "load", "tiny-a");
    events.push(...await turn(client!, { type: "ask", text: "Which model?" }));
    seen.push(await statuses(backend));
    await routerCommand(backend, "unload", "tiny-a");
    events.push(...await turn(client!, { type: "ask", text: "And now?" }));
    seen.push(await statuses(backend));
    const models = events.filter((e) => e.type === "ctx").map((e) => e.max);
    return observe(events, { statuses: seen, ctxMax: models });
  },
  check(seen) {
    assert.deepEqual(seen.events, [
      "user",
      "state thinking",
      "token…",
      "done truncated_by max_tokens",
      "ctx",
      "state idle",
      "user",
      "state thinking",
      "error no_model_loaded turn",
      "state idle",
    ]);
    assert.deepEqual(seen.extra.statuses, [
      { "tiny-a": "unloaded", "tiny-b": "unloaded" },
      { "tiny-a": "loaded", "tiny-b": "unloaded" },
      { "tiny-a": "unloaded", "tiny-b": "unloaded" },
    ]);
    assert.deepEqual(seen.extra.ctxMax, [4096]);
  },
};

/** The router scenario. */
export const ROUTER_SCENARIOS: Scenario[] = [neverSwap];
