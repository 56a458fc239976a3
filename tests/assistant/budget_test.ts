/** The context budget alone: the reserve, the history chosen, leaving out, cutting results, the 400 resends, and the ledger's estimates. */
import { contentText } from "../../src/llm/chat_types.ts";
import assert from "node:assert/strict";
import type { ChatMessage } from "../../src/llm/chat_types.ts";
import { AssistantError } from "../../src/base/errors.ts";
import { ContextOverflow } from "../../src/llm/http_error.ts";
import { ContextPlan, type PlanOptions } from "../../src/assistant/budget.ts";
import { replyReserve, wantedReserve } from "../../src/assistant/reserve.ts";
import { MAX_RESENDS, sendWithin } from "../../src/assistant/resend.ts";
import { newestThatFit } from "../../src/assistant/history_window.ts";
import {
  cutLargest,
  NOTE_TOKENS,
  type Result,
  resultText,
} from "../../src/assistant/result_cut.ts";
import {
  messagesText,
  TokenLedger,
  utf8Bytes,
} from "../../src/assistant/token_ledger.ts";

const CONFIG = { reply_reserve: 1024, request: {}, history_turns: 10 };
const signal = new AbortController().signal;

function turn(i: number): ChatMessage[] {
  return [
    { role: "user", content: `question ${i}` },
    { role: "assistant", content: `answer ${i}` },
  ];
}

function plan(overrides: Partial<PlanOptions> = {}): ContextPlan {
  const history = overrides.history ??
    Array.from({ length: 30 }, (_, i) => turn(i));
  return new ContextPlan({
    ledger: new TokenLedger(),
    model: "m",
    nCtx: 4096,
    config: CONFIG,
    system: { role: "system", content: "Be brief." },
    schemas: [],
    question: { role: "user", content: "and now?" },
    history,
    counts: history.map(() => 200),
    // A tokenizer of one token per two characters.
    tokenize: (text) => Promise.resolve(Math.ceil(text.length / 2)),
    signal,
    ...overrides,
  });
}

function refusal(promptTokens: number, nCtx: number): AssistantError {
  return new AssistantError(
    `llama-server answered 400: request (${promptTokens} tokens) exceeds the available context size (${nCtx} tokens), try increasing it`,
    { cause: new ContextOverflow(promptTokens, nCtx) },
  );
}

Deno.test("the reserve is max_tokens when set, else reply_reserve, never more than half the context", () => {
  assert.equal(replyReserve(4096, CONFIG), 1024);
  assert.equal(replyReserve(1024, CONFIG), 512);
  assert.equal(
    replyReserve(4096, { ...CONFIG, request: { max_tokens: 300 } }),
    300,
  );
  assert.equal(
    replyReserve(4096, { ...CONFIG, request: { max_tokens: 3000 } }),
    2048,
  );
  // -1 is llama-server's "no limit": the config's reserve applies.
  assert.equal(
    replyReserve(4096, { ...CONFIG, request: { max_tokens: -1 } }),
    1024,
  );
});

Deno.test("history is the newest turns that fit, at most the limit, stopping at the first that does not", () => {
  const costs = [10, 500, 10, 10, 10];
  assert.equal(newestThatFit(5, (i) => costs[i]!, 100, 10), 3);
  assert.equal(newestThatFit(5, (i) => costs[i]!, 100, 2), 2);
  assert.equal(newestThatFit(5, (i) => costs[i]!, 5, 10), 0);
  assert.equal(newestThatFit(5, (i) => costs[i]!, Infinity, 10), 5);
});

Deno.test("a plan sends what fits the context less the reserve, and the request is in order", () => {
  const fitted = plan();
  // 3,072 tokens of room: the fixed part and the question, then 200 a turn.
  assert.equal(fitted.budget, 3072);
  assert.ok(fitted.sent > 0 && fitted.sent < 15, `${fitted.sent} sent`);
  assert.ok(fitted.estimate() <= 3072, `${fitted.estimate()}`);
  assert.equal(fitted.total, 30);
  const messages = fitted.messages();
  assert.equal(messages[0]!.role, "system");
  assert.equal(messages.at(-1)!.content, "and now?");
  assert.equal(messages[1]!.content, `question ${30 - fitted.sent}`);
  assert.equal(messages.at(-2)!.content, "answer 29");

  assert.equal(plan({ config: { ...CONFIG, history_turns: 3 } }).sent, 3);
  // An unknown context size limits only by history_turns.
  assert.equal(plan({ nCtx: null }).sent, 10);
});

Deno.test("a refusal leaves out the oldest turns covering the overshoot and the reserve, at most twice", async () => {
  const fitted = plan();
  const before = fitted.sent;
  const sizes: number[] = [];
  const stream = await sendWithin(fitted, (messages) => {
    sizes.push(messages.length);
    // The server counts 600 over the context on the first try.
    if (sizes.length === 1) return Promise.reject(refusal(4696, 4096));
    return Promise.resolve("stream");
  });
  assert.equal(stream, "stream");
  // 4,696 - 3,072 = 1,624 over; a turn of 200 surely saves 200 less its
  // template (2 × 8) = 184: nine turns.
  assert.equal(before, 10);
  assert.equal(before - fitted.sent, 9);
  assert.equal(sizes[0]! - sizes[1]!, 18);

  // A server that refuses however much is left out: two resends, then its
  // own error, since turns were still being sent.
  let tries = 0;
  const stubborn = plan({
    config: { ...CONFIG, history_turns: 30 },
    counts: Array(30).fill(100),
  });
  await assert.rejects(
    sendWithin(stubborn, () => {
      tries++;
      return Promise.reject(refusal(4100, 4096));
    }),
    /answered 400: request \(4100 tokens\)/,
  );
  assert.equal(tries, 1 + MAX_RESENDS);
  assert.ok(stubborn.sent > 0);
});

Deno.test("a question too long alone fails at once with both sizes; other errors pass unchanged", async () => {
  const alone = plan({ history: [], counts: [] });
  let tries = 0;
  const error = await sendWithin(alone, () => {
    tries++;
    return Promise.reject(refusal(9000, 4096));
  }).catch((e) => e);
  assert.equal(tries, 1);
  assert.ok(error instanceof AssistantError);
  assert.equal(
    error.message,
    "the question is too long for the model's context (9000 tokens, the context holds 4096)",
  );

  const other = new AssistantError("llama-server answered 503: Loading model");
  await assert.rejects(
    sendWithin(plan(), () => Promise.reject(other)),
    (e) => e === other,
  );
});

Deno.test("a refusal teaches the context size when /props did not say it", async () => {
  const ledger = new TokenLedger();
  const unknown = plan({ ledger, nCtx: null });
  assert.equal(unknown.budget, null);
  let first = true;
  await sendWithin(unknown, () => {
    if (first) {
      first = false;
      return Promise.reject(refusal(3000, 2048));
    }
    return Promise.resolve(null);
  });
  assert.equal(unknown.budget, 1024);
  assert.equal(ledger.contextSize("m"), 2048);
  assert.equal(plan({ ledger, nCtx: null }).budget, 1024);
});

Deno.test("a follow-up that would not fit leaves out history first, then cuts the largest result with a note", async () => {
  const fitted = plan({ history: [turn(0), turn(1)], counts: [200, 200] });
  assert.equal(fitted.sent, 2);
  assert.equal(fitted.reported("tool_calls", { used: 650, prompt: 600 }), null);
  fitted.add({ role: "assistant", content: null });
  const small = "small result";
  const big = "x ".repeat(5000);
  fitted.add({ role: "tool", tool_call_id: "a", content: small });
  fitted.add({ role: "tool", tool_call_id: "b", content: big });
  await fitted.measure();
  fitted.fit();
  assert.equal(fitted.sent, 0, "history goes first");
  assert.ok(fitted.estimate() <= 3072, `${fitted.estimate()}`);
  const [, ...rest] = fitted.messages().slice(-3);
  assert.equal(rest[0]!.content, small, "the small result is whole");
  assert.match(
    contentText(rest[1]!.content),
    /^(x )+\n\n\[The rest of this tool result was cut: it was about 5000 tokens, more than the model's context had room for, and only its first \d+ are shown above\.\]$/,
  );
});

Deno.test("cutLargest cuts the largest results to one common size; resultText keeps characters whole", () => {
  const results: Result[] = [
    { full: "a", tokens: 100, kept: 100 },
    { full: "b", tokens: 1000, kept: 1000 },
    { full: "c", tokens: 600, kept: 600 },
  ];
  const saved = cutLargest(results, 700);
  assert.ok(saved >= 700, `${saved}`);
  assert.equal(results[0]!.kept, 100, "the smallest is untouched");
  assert.equal(results[1]!.kept, results[2]!.kept);
  assert.ok(results[1]!.kept < 600);
  // Nothing left to cut: nothing saved.
  const none: Result[] = [{ full: "", tokens: 50, kept: 0 }];
  assert.equal(cutLargest(none, 10), 0);
  // More than all of it: everything goes, with a note.
  const all: Result[] = [{ full: "😀".repeat(100), tokens: 100, kept: 100 }];
  cutLargest(all, 10_000);
  assert.equal(all[0]!.kept, 0);
  assert.match(resultText(all[0]!), /^\[This tool result was left out/);
  const half: Result = { full: "😀".repeat(101), tokens: 101, kept: 50 };
  const text = resultText(half);
  assert.equal(text.toWellFormed(), text, "no surrogate split");
  assert.ok(NOTE_TOKENS > 0);
});

Deno.test("the ledger estimates high before calibration and from the model's own counts after", async () => {
  const ledger = new TokenLedger();
  const text = "The quick brown fox jumps over the lazy dog. ".repeat(20);
  const bytes = utf8Bytes(text);
  const before = ledger.estimate("m", bytes);
  // One token per four bytes, as an English text often is.
  const count = await ledger.count(
    "m",
    text,
    (t) => Promise.resolve(Math.ceil(utf8Bytes(t) / 4)),
    signal,
  );
  assert.deepEqual(count, { tokens: bytes / 4, measured: true });
  const after = ledger.estimate("m", bytes);
  assert.ok(before > after, `${before} then ${after}`);
  assert.ok(after > bytes / 4, "still above the measured count");
  assert.ok(after <= Math.ceil(bytes / 4 * 1.25));
  // Another model keeps its own rate.
  assert.equal(ledger.estimate("other", bytes), before);

  // A failed count is an estimate, not measured.
  const failed = await ledger.count(
    "m",
    text,
    () => Promise.reject(new Error("no /tokenize")),
    signal,
  );
  assert.deepEqual(failed, { tokens: after, measured: false });
  assert.equal(
    utf8Bytes("città 😀"),
    new TextEncoder().encode("città 😀").length,
  );
  assert.equal(
    messagesText([{
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "1",
        type: "function",
        function: { name: "date", arguments: "{}" },
      }],
    }]),
    "date\n{}",
  );
});

Deno.test("the fixed part is counted once per model, then learned from reported sizes", async () => {
  const ledger = new TokenLedger();
  const text = "You are a helpful assistant. ".repeat(10);
  const bytes = utf8Bytes(text);
  const guessed = ledger.fixed("m", bytes, 0);
  let counts = 0;
  const tokenize = (t: string) => {
    counts++;
    return Promise.resolve(Math.ceil(utf8Bytes(t) / 5));
  };
  await ledger.prime("m", text, 0, tokenize, signal);
  const primed = ledger.fixed("m", bytes, 0);
  assert.ok(primed < guessed, `${primed} after ${guessed}`);
  assert.ok(primed >= bytes / 5);
  await ledger.prime("m", text, 0, tokenize, signal);
  assert.equal(counts, 1, "counted once");
  // What llama-server reported replaces the count; the largest seen stays.
  ledger.learnFixed("m", bytes, 70);
  assert.equal(ledger.fixed("m", bytes, 0), 70);
  ledger.learnFixed("m", bytes, 60);
  assert.equal(ledger.fixed("m", bytes, 0), 70);
  // More text since (a tool added) adds its estimate.
  assert.ok(ledger.fixed("m", bytes + 500, 1) > 70);
});

Deno.test("a reply ended by length is cut by the context when it filled it, else by max_tokens", () => {
  const limited = { ...CONFIG, request: { max_tokens: 100 } };
  assert.equal(plan().reported("stop", { used: 900, prompt: 800 }), null);
  assert.equal(
    plan({ config: limited }).reported("length", { used: 4096, prompt: 4000 }),
    "context",
  );
  assert.equal(
    plan({ config: limited }).reported("length", { used: 900, prompt: 800 }),
    "max_tokens",
  );
  // Without a token limit only the context can end a reply so.
  assert.equal(plan().reported("length", { used: 900 }), "context");
  assert.equal(plan().reported("length", null), "context");
  // With one, a context not seen to be full did not end it.
  assert.equal(
    plan({ config: limited }).reported("length", null),
    "max_tokens",
  );
  assert.equal(
    plan({ config: limited, nCtx: null }).reported("length", { used: 4096 }),
    "max_tokens",
  );
  // The limit reached is what ended it, even as the context fills.
  assert.equal(
    plan({ config: limited }).reported("length", { used: 4096, prompt: 3996 }),
    "max_tokens",
  );
});

Deno.test("n_predict and max_completion_tokens limit a reply as max_tokens does: its reserve, and what cut it", () => {
  for (const key of ["n_predict", "max_completion_tokens"]) {
    const limited = { ...CONFIG, request: { [key]: 100 } };
    assert.deepEqual(wantedReserve(limited), { tokens: 100, from: key });
    assert.equal(replyReserve(4096, limited), 100);
    assert.equal(
      plan({ config: limited }).reported("length", { used: 900, prompt: 800 }),
      "max_tokens",
    );
    assert.equal(
      plan({ config: limited }).reported("length", {
        used: 4096,
        prompt: 4000,
      }),
      "context",
    );
  }
  // llama-server reads n_predict before max_tokens.
  assert.deepEqual(
    wantedReserve({ ...CONFIG, request: { max_tokens: 50, n_predict: 70 } }),
    { tokens: 70, from: "n_predict" },
  );
});

Deno.test("after a failed count the model's counts are estimated for a minute, then tried again", async () => {
  let now = 0;
  const ledger = new TokenLedger({ now: () => now });
  let tries = 0;
  const broken = () => {
    tries++;
    return Promise.reject(new Error("HTTP 404 for /tokenize"));
  };
  const text = "Some question about the weather in Oslo.";
  assert.equal((await ledger.count("m", text, broken, signal)).measured, false);
  assert.equal((await ledger.count("m", text, broken, signal)).measured, false);
  assert.equal(tries, 1, "one request, not one per count");
  // Another model is asked as usual.
  await ledger.count("other", text, broken, signal);
  assert.equal(tries, 2);
  now += 60_000;
  const working = (t: string) => Promise.resolve(t.length);
  assert.deepEqual(await ledger.count("m", text, working, signal), {
    tokens: text.length,
    measured: true,
  });
});

Deno.test("a result is not cut for a reserve cutting cannot buy back, only to fit the context itself", async () => {
  const fitting = async (prompt: number) => {
    const fitted = plan({ history: [], counts: [] });
    fitted.reported("tool_calls", { used: prompt + 20, prompt });
    fitted.add({ role: "assistant", content: null });
    fitted.add({ role: "tool", tool_call_id: "a", content: "x ".repeat(100) });
    await fitted.measure();
    fitted.fit();
    return contentText(fitted.messages().at(-1)!.content);
  };
  // The fixed part alone passes the budget (3,072): the 100-token result could
  // not make up for it, and the request fits the context with room to reply.
  assert.equal(await fitting(3300), "x ".repeat(100));
  // Past the context less a quarter of the reserve, it goes.
  assert.match(await fitting(3900), /^\[This tool result was left out/);
});
