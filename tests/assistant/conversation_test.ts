/**
 * One conversation as one object: the registry hands out the same object
 * for an id, and the conversation plans its requests, keeps its turns and
 * their sizes, and says which summary is due. Driven directly with a real
 * history file and a scripted model's choice, no reply loop around it.
 */
import { contentText } from "../../src/llm/chat_types.ts";
import assert from "node:assert/strict";
import { CacheBook } from "../../src/assistant/cache_book.ts";
import type { Conversation } from "../../src/assistant/conversation.ts";
import { Conversations } from "../../src/assistant/conversations.ts";
import { TokenLedger } from "../../src/assistant/token_ledger.ts";
import type { ModelChoice } from "../../src/llm/client.ts";
import { Store } from "../../src/store/store.ts";
import { countTokens } from "../support/fake_llm_context.ts";
import { TURN_CONFIG } from "../support/turn_config.ts";

const MODEL: ModelChoice = { id: "m.gguf", router: false, nCtx: 1024 };
const signal = new AbortController().signal;

async function registry(config = {}) {
  const dir = await Deno.makeTempDir({ prefix: "da-conv-" });
  const store = new Store(`${dir}/history.db`);
  const conversations = new Conversations({
    store,
    ledger: new TokenLedger(),
    book: new CacheBook(store),
    config: { ...TURN_CONFIG, ...config },
  });
  return {
    store,
    conversations,
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Plans a question, then keeps it with `reply` as the model's answer, as a reply's end does. */
async function asked(
  conversation: Conversation,
  text: string,
  reply: string,
  replaces = false,
) {
  const plan = await conversation.plan({
    text,
    replaces,
    model: MODEL,
    schemas: [],
    now: new Date(0),
    warm: false,
    files: [],
    tokenize: (text) => Promise.resolve(countTokens(text)),
    signal,
  });
  const request = plan.request();
  plan.reported("stop", { used: 100, prompt: 90 });
  const kept = conversation.commit(plan, {
    user: text,
    reply,
    tools: [],
    messages: [plan.question, { role: "assistant", content: reply }],
    files: [],
    replaces,
    model: MODEL,
  });
  return { plan, request, ...kept };
}

Deno.test("opening a conversation something holds gives the same object, and a write through it is what every holder sees", async () => {
  await using r = await registry();
  const fresh = r.conversations.create();
  await asked(fresh, "First", "One.");
  const id = fresh.id!;
  assert.equal(r.conversations.open(id), fresh, "the saved new one");
  const again = r.conversations.open(id);
  await asked(again, "Second", "Two.");
  assert.deepEqual(fresh.turns.map((t) => t.reply), ["One.", "Two."]);
  assert.deepEqual(r.store.open(id)!.turns.map((t) => t.reply), [
    "One.",
    "Two.",
  ]);
  assert.throws(() => r.conversations.open(id + 1), /no such conversation/);
});

Deno.test("a retry is planned as if the turn it replaces had not been, and replaces it once kept", async () => {
  await using r = await registry();
  const c = r.conversations.create();
  await asked(c, "One", "First answer.");
  await asked(c, "Two", "Second answer.");
  const retry = await asked(c, "Two", "Second, again.", true);
  const sent = JSON.stringify(retry.request);
  assert.ok(sent.includes("First answer."));
  assert.ok(!sent.includes("Second answer."), "not the answer replaced");
  assert.equal(retry.plan.total, 1);
  assert.deepEqual(c.turns.map((t) => t.reply), [
    "First answer.",
    "Second, again.",
  ]);
  assert.equal(r.store.open(c.id!)!.turns.length, 2);
});

Deno.test("a summary saved before the rule, covering the turn a retry replaces, is neither sent nor kept", async () => {
  await using r = await registry();
  const c = r.conversations.create();
  await asked(c, "One", "First answer.");
  await asked(c, "Two", "Second answer.");
  const id = c.id!;
  r.store.setSummary(id, {
    text: "The user heard First answer. and Second answer.",
    turns: 2,
    tokens: null,
  });
  // The next run reads the conversation as the history file holds it.
  const again = new Conversations({
    store: r.store,
    ledger: new TokenLedger(),
    book: new CacheBook(r.store),
    config: TURN_CONFIG,
  }).open(id);
  const retry = await asked(again, "Two", "Second, again.", true);
  assert.ok(!JSON.stringify(retry.request).includes("Second answer."));
  assert.equal(again.summary, null);
  assert.equal(r.store.summary(id), null);
  const next = await asked(again, "Three", "Third answer.");
  const sent = JSON.stringify(next.request);
  assert.ok(!sent.includes("Second answer."), "not in a later request either");
  assert.ok(sent.includes("First answer.") && sent.includes("Second, again."));
});

Deno.test("a turn's count lands only while the conversation still holds the turn", async () => {
  await using r = await registry();
  const c = r.conversations.create();
  const first = await asked(c, "One", "Answer.");
  assert.equal(c.count(first.held, 42), true);
  assert.equal(r.store.open(c.id!)!.tokens[0], 42);
  const replaced = await asked(c, "One", "Other answer.", true);
  assert.equal(c.count(first.held, 7), false, "the replaced turn's count");
  assert.equal(r.store.open(c.id!)!.tokens[0], null);
  assert.equal(c.count(replaced.held, 50), true);
  assert.equal(r.store.open(c.id!)!.tokens[0], 50);
});

Deno.test("the summary due never covers the newest turn, however large it is", async () => {
  await using r = await registry({
    compact: true,
    history_turns: 4,
    summary_tokens: 60,
  });
  const c = r.conversations.create();
  assert.equal(c.summaryDue(), null, "nothing asked yet");
  const long = "Words and more words. ".repeat(60);
  for (let n = 1; n <= 3; n++) await asked(c, `Question ${n}`, long);
  const due = c.summaryDue();
  assert.equal(due, 2, "every turn but the newest");
  const job = c.summaryRequest(due!);
  assert.ok(job, "a request that fits");
  // As many of those as fit beside the summary to come.
  assert.ok(job.upTo >= 1 && job.upTo <= 2, `${job.upTo}`);
  // The newest turn is either not in the request, or left out by its
  // instruction (a request that begins as the last one did shows it).
  const instruction = contentText(job.messages.at(-1)!.content);
  const shown = JSON.stringify(job.messages.slice(0, -1));
  assert.ok(
    !shown.includes("Question 3") || /its last exchange/.test(instruction),
    instruction,
  );
  // Kept, it rides in the next question; a retry's request never carries
  // more than the turns before the one it replaces.
  assert.equal(
    c.keepSummary({ text: "Earlier things.", turns: 2, tokens: 5 }),
    true,
  );
  assert.equal(c.summaryDue(), null, "covered");
  const retry = await asked(c, "Question 3", "Short now.", true);
  assert.ok(JSON.stringify(retry.request).includes("Earlier things."));
  // A failed request is not asked for again at the same move.
  await asked(c, "Question 4", long);
  const next = c.summaryDue()!;
  c.summaryFailed(next);
  assert.equal(c.summaryDue(), null);
});

Deno.test("a deleted conversation is discarded: no summary is due, none is kept, and opening it fails", async () => {
  await using r = await registry({ compact: true, history_turns: 2 });
  const c = r.conversations.create();
  const long = "Words and more words. ".repeat(60);
  for (let n = 1; n <= 3; n++) await asked(c, `Question ${n}`, long);
  assert.notEqual(c.summaryDue(), null);
  const id = c.id!;
  assert.equal(r.conversations.delete(id), c);
  assert.equal(c.deleted, true);
  assert.equal(c.summaryDue(), null);
  assert.equal(c.keepSummary({ text: "x", turns: 1, tokens: 1 }), false);
  assert.throws(() => r.conversations.open(id), /no such conversation/);
  assert.throws(() => r.conversations.delete(id), /no such conversation/);
});
