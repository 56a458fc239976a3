/**
 * The tier's reply scenarios, through the daemon: a plain reply, a reply
 * that thinks first, a tool round, a stop that frees the server's slot, and
 * a question longer than the context. The random model is steered where it
 * must be: `max_tokens` ends every reply, the reasoning budget ends its
 * thinking, and `logit_bias` with `tool_choice: "required"` makes it call
 * the tool (the server's grammar writes the call).
 */
import assert from "node:assert/strict";
import { hold, reply } from "../support/fake_llm.ts";
import { SPECIAL_TOKENS } from "../support/gguf_models.ts";
import { observe, type Scenario, turn } from "./scenario.ts";

/** The fields llama-server's `timings` give a turn, as the daemon reports them. */
export const TIMINGS_FIELDS = [
  "cache_n",
  "predicted_ms",
  "predicted_n",
  "prompt_ms",
  "prompt_n",
];

/** `count` words for the fake to stream: more than any `max_tokens` here lets through. */
export function words(count: number): string[] {
  return Array.from({ length: count }, (_, i) => ` w${i}`);
}

const TOOLS = new URL("./tools/", import.meta.url).pathname;

const plain: Scenario = {
  name: "a plain reply streams, ends at max_tokens as truncated, with timings",
  real: { role: "shift" },
  fake: { scripts: [reply({ content: words(40) })] },
  daemon: {
    config: "thinking = false\ncompact = false\n[request]\nmax_tokens = 16\n",
  },
  async run({ client }) {
    return observe(await turn(client!, { type: "ask", text: "Hello there" }));
  },
  check(seen) {
    assert.deepEqual(seen.events, [
      "user",
      "state thinking",
      "token…",
      "done truncated_by max_tokens",
      "ctx",
      "state idle",
    ]);
    assert.deepEqual(seen.timings, [TIMINGS_FIELDS]);
    assert.deepEqual(seen.predicted, [16]);
  },
};

const thinking: Scenario = {
  name: "a reply that thinks first: reasoning, then the answer",
  real: { role: "shift" },
  fake: {
    scripts: [reply({ think: words(8), content: words(40) })],
  },
  daemon: {
    config: "thinking = true\ncompact = false\n[request]\n" +
      "max_tokens = 24\nreasoning_budget_tokens = 8\n",
  },
  async run({ client }) {
    return observe(
      await turn(client!, { type: "ask", text: "Think about the sea" }),
    );
  },
  check(seen) {
    assert.deepEqual(seen.events, [
      "user",
      "state thinking",
      "think…",
      "token…",
      "done truncated_by max_tokens",
      "ctx",
      "state idle",
    ]);
    assert.deepEqual(seen.timings, [TIMINGS_FIELDS]);
    assert.deepEqual(seen.predicted, [24]);
  },
};

const toolRound: Scenario = {
  name: "a tool round: the model calls the tool, reads its result, answers",
  real: { role: "shift" },
  fake: {
    scripts: [
      reply({ toolCalls: [{ name: "clock", arguments: "{}" }] }),
      reply({ content: [] }),
    ],
  },
  daemon: {
    // One round with a call required, then the last request (tool_choice
    // none). The grammar of "required" lets text come before the call: a
    // bias on <tool_call> opens it at once, a smaller one on </tool_call>
    // closes it as one token, and the end of turn, biased above both,
    // ends the reply wherever the grammar allows an end.
    config: "thinking = false\ncompact = false\nmax_tool_rounds = 1\n" +
      '[request]\nmax_tokens = 40\ntool_choice = "required"\n' +
      `logit_bias = { "${SPECIAL_TOKENS.toolCall}" = 100, "${SPECIAL_TOKENS.endToolCall}" = 90, "${SPECIAL_TOKENS.imEnd}" = 100 }\n`,
    toolsDirs: [TOOLS],
  },
  async run({ client }) {
    return observe(
      await turn(client!, { type: "ask", text: "What time is it?" }),
    );
  },
  check(seen) {
    assert.deepEqual(seen.events, [
      "user",
      "state thinking",
      "state tool clock",
      "tool clock starts",
      "tool clock done",
      "state thinking",
      "done",
      "ctx",
      "state idle",
    ]);
    assert.deepEqual(seen.timings, [TIMINGS_FIELDS]);
  },
};

const stop: Scenario = {
  name: "a stop ends the reply at once and frees the server's slot",
  real: { role: "shift" },
  fake: { scripts: [hold(words(4))] },
  daemon: {
    config: "thinking = false\ncompact = false\n[request]\nmax_tokens = 4000\n",
  },
  async run({ backend, client }) {
    await client!.send({ type: "ask", text: "Write a long story" });
    const before = await client!.until((event) => event.type === "token");
    const after = await turn(client!, { type: "stop" });
    await backend.released();
    const slots = await backend.json("/slots");
    assert.equal(slots.status, 200);
    const list = slots.body as { is_processing: boolean }[];
    // Every slot's fields; a slot that served a task also describes it
    // (id_task, params, …), which the fake leaves out.
    const common = list.map((slot) => Object.keys(slot)).reduce((a, b) =>
      a.filter((key) => b.includes(key))
    );
    return observe([...before, ...after], {
      processing: list.filter((slot) => slot.is_processing).length,
      slotFields: common.sort(),
    });
  },
  check(seen) {
    assert.deepEqual(seen.events, [
      "user",
      "state thinking",
      "token…",
      "done stopped",
      "state idle",
    ]);
    assert.equal(seen.extra.processing, 0, "no slot is still generating");
  },
};

const tooLong: Scenario = {
  name: "a question longer than the context: one error, question_too_long",
  real: { role: "shift" },
  fake: {},
  daemon: {
    config: "thinking = false\ncompact = false\n[request]\nmax_tokens = 16\n",
  },
  async run({ client }) {
    // About 6,000 tokens on either server, for a 4,096-token context.
    const text = words(6000).join("");
    return observe(await turn(client!, { type: "ask", text }));
  },
  check(seen) {
    assert.deepEqual(seen.events, [
      "user",
      "state thinking",
      "error question_too_long turn",
      "state idle",
    ]);
  },
};

/** The reply scenarios, in the order they run. */
export const REPLY_SCENARIOS: Scenario[] = [
  plain,
  thinking,
  toolRound,
  stop,
  tooLong,
];
