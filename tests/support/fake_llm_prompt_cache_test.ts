/**
 * The fake's prompt cache on the wire, against the captured conversation of
 * `prompt_cache/`: the same requests give the same shape of numbers, in
 * `timings` and `usage` where the real server puts them.
 */
import assert from "node:assert/strict";
import { log } from "../../src/base/log.ts";
import { countTokens, FakeLlm, fixturesDir, hold, reply } from "./fake_llm.ts";
import { chunks, post, shapes } from "./fake_llm_sse.ts";

const FIXTURES = fixturesDir();
const noFixtures = FIXTURES === null;
if (noFixtures) {
  log.warn("llama-server captures not found: fixture tests are skipped");
}

/** The captured conversation, in the order it was sent. */
const SEQUENCE = [
  "turn1_window_grows",
  "turn2_window_grows",
  "turn3_window_grows",
  "turn4_window_grows",
  "turn5_window_slid_no_reuse",
  "turn5_setup_replay_turn4",
  "turn5_window_slid_n_cache_reuse_64",
] as const;
type Name = typeof SEQUENCE[number];

/** What a request cost, as its final chunk reports it. */
interface Cost {
  prompt_n: number;
  cache_n: number;
  prompt_tokens: number;
  cached_tokens: number;
}

function cost(stream: string): Cost {
  const last = chunks(stream).at(-1) as {
    timings: { prompt_n: number; cache_n: number };
    usage: {
      prompt_tokens: number;
      prompt_tokens_details: { cached_tokens: number };
    };
  };
  return {
    prompt_n: last.timings.prompt_n,
    cache_n: last.timings.cache_n,
    prompt_tokens: last.usage.prompt_tokens,
    cached_tokens: last.usage.prompt_tokens_details.cached_tokens,
  };
}

function captured(name: Name, ext: "sse" | "request.json"): string {
  return Deno.readTextFileSync(`${FIXTURES}/prompt_cache/${name}.${ext}`);
}

/** The captured requests sent to the fake, each answered as the tiny model did: reasoning until max_tokens. */
async function replay(llm: FakeLlm): Promise<Record<Name, Cost>> {
  const costs: Partial<Record<Name, Cost>> = {};
  for (const name of SEQUENCE) {
    llm.enqueue(reply({ think: Array(40).fill(" word") }));
    const response = await post(llm, captured(name, "request.json"));
    costs[name] = cost(await response.text());
  }
  return costs as Record<Name, Cost>;
}

/** What the captures show about the cache, as checks that hold for the real server's numbers. */
function relations(c: Record<Name, Cost>): Record<string, boolean> {
  const [t1, t2, t3, t4] = [
    c.turn1_window_grows,
    c.turn2_window_grows,
    c.turn3_window_grows,
    c.turn4_window_grows,
  ];
  const slid = c.turn5_window_slid_no_reuse;
  const reused = c.turn5_window_slid_n_cache_reuse_64;
  return {
    "a fresh slot evaluates everything": t1.cache_n === 0,
    // The generation prompt's `<think>\n` is not what the history re-renders.
    "a growing window reuses all of the last prompt but the generation prompt's think tag":
      t2.cache_n === t1.prompt_tokens - 2 &&
      t3.cache_n === t2.prompt_tokens - 2 &&
      t4.cache_n === t3.prompt_tokens - 2,
    "a growing window reads the same few tokens each turn":
      t2.prompt_n === t3.prompt_n && t3.prompt_n === t4.prompt_n,
    "a slid window reuses less than the first turn's prompt":
      slid.cache_n < t1.prompt_tokens,
    "a slid window reads every kept turn again":
      slid.prompt_n > 3 * t4.prompt_n,
    "replaying turn 4 reuses what the slid request did":
      c.turn5_setup_replay_turn4.cache_n === slid.cache_n,
    "n_cache_reuse makes a slid window cost about a growing one":
      reused.prompt_n < 1.2 * t4.prompt_n && reused.cache_n > slid.cache_n,
    "usage agrees with timings": Object.values(c).every((x) =>
      x.cached_tokens === x.cache_n &&
      x.prompt_tokens === x.cache_n + x.prompt_n
    ),
  };
}

Deno.test({
  name:
    "the captured conversation: the fake's cache shows what the real server's did",
  ignore: noFixtures,
  async fn() {
    const real = Object.fromEntries(
      SEQUENCE.map((name) => [name, cost(captured(name, "sse"))]),
    ) as Record<Name, Cost>;
    const expected = relations(real);
    assert.ok(Object.values(expected).every((holds) => holds), "the captures");
    // The captures' server had 4 slots; the fake's default is 1.
    for (const slots of [4, 1]) {
      await using llm = await FakeLlm.start({ slots });
      const costs = await replay(llm);
      assert.deepEqual(relations(costs), expected, `${slots} slots`);
      // The log says the same as the wire, and where the reused tokens came from.
      assert.deepEqual(
        llm.cacheLog.map((use) => [use.promptN, use.cacheN]),
        SEQUENCE.map((name) => [costs[name].prompt_n, costs[name].cache_n]),
      );
      assert.equal(new Set(llm.cacheLog.map((use) => use.slot)).size, 1);
      assert.ok(llm.cacheLog.at(-1)!.shifted > 0);
      assert.deepEqual(
        llm.cacheLog.slice(0, -1).map((use) => use.shifted),
        [0, 0, 0, 0, 0, 0],
      );
      const totals = llm.cacheTotals();
      assert.equal(totals.requests, SEQUENCE.length);
      assert.equal(
        totals.promptN,
        SEQUENCE.reduce((sum, name) => sum + costs[name].prompt_n, 0),
      );
    }
  },
});

Deno.test({
  name:
    "a model that cannot shift reads the slid window again despite n_cache_reuse",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start({ shift: false });
    const costs = await replay(llm);
    const slid = costs.turn5_window_slid_no_reuse;
    const asked = costs.turn5_window_slid_n_cache_reuse_64;
    assert.deepEqual(
      [asked.prompt_n, asked.cache_n],
      [slid.prompt_n, slid.cache_n],
    );
    assert.equal(llm.cacheLog.at(-1)!.shifted, 0);
    // The growing window is cached the same either way.
    assert.equal(
      costs.turn4_window_grows.cache_n,
      costs.turn3_window_grows.prompt_tokens - 2,
    );
  },
});

Deno.test({
  name:
    "timings and cached_tokens ride where the captures put them, with include_usage and without",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    const request = JSON.parse(captured("turn2_window_grows", "request.json"));
    llm.enqueue(reply({ think: Array(40).fill(" word") }));
    const text = await (await post(llm, request)).text();
    assert.deepEqual(
      shapes(text),
      shapes(captured("turn2_window_grows", "sse")),
    );
    const { stream_options: _, ...bare } = request;
    llm.enqueue(reply({ content: ["ick", " scored"], finishReason: "length" }));
    const plain = await (await post(llm, bare)).text();
    assert.deepEqual(
      shapes(plain),
      shapes(
        Deno.readTextFileSync(
          `${FIXTURES}/single/stream_content_no_include_usage.sse`,
        ),
      ),
    );
    // The same prompt again: all of it cached but the one token evaluated.
    const finish = chunks(plain).at(-1) as {
      timings: { cache_n: number; prompt_n: number };
    };
    assert.deepEqual(
      [finish.timings.prompt_n, finish.timings.cache_n],
      [1, llm.chats[1]!.promptTokens! - 1],
    );
  },
});

/** A user message and an assistant one as the fake's template renders them. */
const part = (role: string, text: string) =>
  `<|im_start|>${role}\n${text}<|im_end|>\n`;

Deno.test("a reply sent back is read again: the template renders it without the think block its generation prompt had", async () => {
  const system = { role: "system", content: "You are terse." };
  const question = { role: "user", content: "What is the time?" };
  const answer = { role: "assistant", content: "It is noon." };
  const next = { role: "user", content: "And tomorrow?" };
  for (const thinking of [false, true]) {
    await using llm = await FakeLlm.start();
    const kwargs = { chat_template_kwargs: { enable_thinking: thinking } };
    llm.enqueue(
      reply({
        // Thinking off, the model writes no reasoning.
        think: thinking ? ["Look", " at", " it"] : [],
        content: ["It", " is", " noon."],
      }),
    );
    await (await post(llm, { messages: [system, question], ...kwargs })).text();
    await (await post(llm, {
      messages: [system, question, answer, next],
      ...kwargs,
    })).text();
    const [, second] = llm.cacheLog;
    // As a real llama-server with this template: thinking off, the
    // generation prompt ends with an empty think block the history never
    // repeats; thinking on, the slot holds the reasoning. Either way the
    // match ends after the assistant's opening and the reply is read again.
    const generation = thinking
      ? "<|im_start|>assistant\n<think>\n"
      : "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    const answerRead = countTokens(part("assistant", answer.content)) -
      countTokens("<|im_start|>assistant\n");
    assert.equal(
      second!.promptN,
      answerRead + countTokens(part("user", next.content)) +
        countTokens(generation),
      `thinking ${thinking}`,
    );
  }
});

Deno.test("a tool call sent back with its result is reused up to the result", async () => {
  await using llm = await FakeLlm.start();
  const kwargs = { chat_template_kwargs: { enable_thinking: false } };
  const messages = [{ role: "user", content: "Weather in Paris?" }];
  llm.enqueue(reply({
    toolCalls: [{ name: "weather", arguments: '{"place":"Paris"}', id: "c1" }],
  }));
  await (await post(llm, { messages, ...kwargs })).text();
  const call = {
    role: "assistant",
    content: null,
    tool_calls: [{
      id: "c1",
      type: "function",
      function: { name: "weather", arguments: '{"place":"Paris"}' },
    }],
  };
  const result = { role: "tool", tool_call_id: "c1", content: "Sunny" };
  await (await post(llm, {
    messages: [...messages, call, result],
    ...kwargs,
  })).text();
  assert.equal(
    llm.cacheLog[1]!.promptN,
    countTokens("<|im_end|>\n") +
      countTokens(
        "<|im_start|>user\n<tool_response>\nSunny\n</tool_response><|im_end|>\n",
      ) + countTokens("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
  );
});

Deno.test("an abandoned request gives its slot back; a restart empties the cache", async () => {
  await using llm = await FakeLlm.start();
  const body = { messages: [{ role: "user", content: "Tell me a story" }] };
  llm.enqueue(hold(["Once"]));
  const controller = new AbortController();
  const response = await post(llm, body, "", controller.signal);
  const reader = response.body!.getReader();
  await reader.read();
  controller.abort();
  await reader.read().catch(() => {});
  await llm.nextAbort();
  await (await post(llm, body)).text();
  const prompt = llm.chats[1]!.promptTokens!;
  assert.deepEqual(
    llm.cacheLog.map((use) => [use.slot, use.cacheN]),
    [[0, 0], [0, prompt - 1]],
  );
  await llm.restart();
  await (await post(llm, body)).text();
  assert.equal(llm.cacheLog[2]!.cacheN, 0);
});

Deno.test("a router keeps each model's cache apart, with the model's own shift", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [{ id: "a" }, { id: "swa", shift: false }],
  });
  const kept = Array.from({ length: 6 }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `Turn ${i} with enough words to make a run of tokens`,
  }));
  const first = [{ role: "user", content: "The first question" }, ...kept];
  for (const model of ["a", "swa"]) {
    await (await post(llm, { model, messages: first })).text();
  }
  for (const model of ["a", "swa"]) {
    await (await post(llm, { model, messages: kept, n_cache_reuse: 8 }))
      .text();
  }
  const [a1, swa1, a2, swa2] = llm.cacheLog;
  assert.deepEqual([a1!.cacheN, swa1!.cacheN], [0, 0]);
  assert.ok(a2!.shifted > 0 && a2!.promptN < 10, JSON.stringify(a2));
  // Only the common prefix: the message's opening, before the words differ.
  assert.equal(swa2!.shifted, 0);
  assert.equal(swa2!.cacheN, countTokens("<|im_start|>user\n"));
});
