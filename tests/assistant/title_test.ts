/** `auto_title`: the title request, what becomes a title, and how it yields to the user. */
import { contentText } from "../../src/llm/chat_types.ts";
import assert from "node:assert/strict";
import { titleFrom, titleMessages } from "../../src/assistant/title.ts";
import { within } from "../support/client_harness.ts";
import { LocalDaemon } from "../support/assistant_harness.ts";
import {
  askedQuestion,
  FakeLlm,
  gated,
  reply,
  stall,
} from "../support/fake_llm.ts";
import {
  isIdle,
  type SocketClient,
  withoutTimings,
} from "../support/socket_client.ts";

async function ask(client: SocketClient, text: string, ref?: string) {
  await client.send({ type: "ask", text, ...(ref ? { ref } : {}) });
  return await client.until(isIdle);
}

type Body = {
  model: string;
  messages: { role: string; content: string }[];
  max_tokens?: number;
  tools?: unknown;
  chat_template_kwargs?: { enable_thinking?: boolean };
};

/** Whether a chat request is a title request (its system message asks for a title). */
function isTitleRequest(body: unknown): boolean {
  return /Write a title/.test((body as Body).messages[0]?.content ?? "");
}

Deno.test("titleFrom keeps the title and drops what models wrap it in", () => {
  assert.equal(titleFrom("Paris Weekend Trip"), "Paris Weekend Trip");
  assert.equal(titleFrom('"Paris weekend trip".'), "Paris weekend trip");
  assert.equal(titleFrom("Title: **Paris trip**\n\nMore text"), "Paris trip");
  assert.equal(
    titleFrom("<think>hmm</think>\n\n# Viaggio a Roma"),
    "Viaggio a Roma",
  );
  assert.equal(titleFrom("  \n  "), null);
  assert.equal(titleFrom('""'), null);
  assert.equal(titleFrom("x".repeat(300)), null);
});

Deno.test("titleMessages quote the question and the reply, cut when long", () => {
  const [system, user] = titleMessages({
    question: "q".repeat(5000),
    reply: "Short reply.",
    model: { id: "m", router: false, nCtx: null },
  });
  assert.equal(system?.role, "system");
  assert.ok(contentText(user?.content ?? "").length < 2200);
  assert.match(contentText(user?.content ?? ""), /Short reply\.$/);
});

Deno.test("auto_title names a conversation after its first reply with one short request to the same model", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "auto_title = true\n",
  });
  await using client = await daemon.connect();
  await using other = await daemon.connect();
  await client.next("hello");
  await other.next("hello");
  llm.enqueue(
    reply({ content: ["Paris is lovely in spring."] }),
    reply({ content: ['"Paris', " in spring", '".'] }),
    reply({ content: ["Second."] }),
    reply({ content: ["Third."] }),
    reply({ content: ["Rome"] }),
  );
  await ask(client, "Where should I travel in April?", "q1");
  const renamed = { type: "renamed", id: 1, title: "Paris in spring" };
  // No command caused it: no ref.
  assert.deepEqual(await client.next("renamed"), renamed);
  assert.deepEqual(
    (await other.until((e) => e.type === "renamed")).at(-1),
    renamed,
  );
  const title = llm.chats[1]!.body as Body;
  const first = llm.chats[0]!.body as Body;
  assert.equal(title.model, first.model);
  assert.equal(title.max_tokens, 24);
  assert.equal(title.chat_template_kwargs?.enable_thinking, false);
  assert.equal(title.tools, undefined);
  assert.match(title.messages[1]!.content, /travel in April/);
  assert.match(title.messages[1]!.content, /lovely in spring/);

  // Later replies, in this conversation or another, ask no more for it.
  await ask(client, "And in May?");
  await client.send({ type: "new" });
  await client.next("conversation");
  await ask(client, "Something else");
  await client.until((e) => e.type === "renamed");
  assert.deepEqual(
    llm.chats.map((c) =>
      isTitleRequest(c.body) ? "title" : askedQuestion(c.body)
    ),
    [
      "Where should I travel in April?",
      "title",
      "And in May?",
      "Something else",
      "title",
    ],
  );
  await client.send({ type: "list" });
  assert.deepEqual(
    (await client.next("conversations")).items.map((i) => i.title),
    ["Rome", "Paris in spring"],
  );
});

Deno.test("auto_title never overwrites a title the user gave", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "auto_title = true\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const gate = Promise.withResolvers<void>();
  llm.enqueue(
    reply({ content: ["An answer."] }),
    gated("Model", gate.promise, " title"),
  );
  await ask(client, "A question worth a title");
  await llm.nextChat();
  const titleRequest = await llm.nextChat();
  assert.ok(isTitleRequest(titleRequest.body));
  await client.send({ type: "rename", id: 1, title: "Mine", ref: "r" });
  assert.deepEqual(await client.next("renamed"), {
    type: "renamed",
    id: 1,
    title: "Mine",
    ref: "r",
  });
  gate.resolve();
  await within(titleRequest.done, "the title request to end");
  await client.send({ type: "list" });
  assert.deepEqual(
    (await client.next("conversations")).items.map((i) => i.title),
    ["Mine"],
  );
  assert.equal(client.received.filter((e) => e.type === "renamed").length, 1);
});

Deno.test("a waiting ask starts at once: the title request gives way and is asked again after the reply", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "auto_title = true\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({ content: ["First answer."] }),
    // The title request that never gets an answer by itself.
    stall(),
    reply({ content: ["Second answer."] }),
    reply({ content: ["Two questions"] }),
  );
  await ask(client, "First question");
  await llm.nextChat();
  const held = await llm.nextChat();
  assert.ok(isTitleRequest(held.body));

  const events = await ask(client, "Second question", "q2");
  assert.deepEqual(withoutTimings(events.find((e) => e.type === "done")!), {
    type: "done",
    id: 1,
    stopped: false,
    ref: "q2",
  });
  // The held request was given up rather than waited for.
  assert.equal(await within(held.done, "the title request to end"), "aborted");
  const again = await llm.nextChat();
  assert.equal(askedQuestion(again.body), "Second question");
  const retried = await llm.nextChat();
  assert.ok(isTitleRequest(retried.body));
  assert.match((retried.body as Body).messages[1]!.content, /First answer/);
  assert.deepEqual(await client.next("renamed"), {
    type: "renamed",
    id: 1,
    title: "Two questions",
  });
});

Deno.test("without auto_title no request follows a reply", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  await ask(client, "One");
  await ask(client, "Two");
  assert.deepEqual(llm.chats.map((c) => askedQuestion(c.body)), ["One", "Two"]);
  assert.equal(client.received.some((e) => e.type === "renamed"), false);
});

Deno.test("an edit of the first turn drops the title request made before it and asks one for the edited turn", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "auto_title = true\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({ content: ["About Paris."] }),
    // The title request for the first wording, which gives way to the edit.
    stall(),
    reply({ content: ["About Rome."] }),
    reply({ content: ["Rome in autumn"] }),
  );
  await ask(client, "Tell me about Paris");
  await llm.nextChat();
  const held = await llm.nextChat();
  assert.ok(isTitleRequest(held.body));
  await client.send({ type: "edit", text: "Tell me about Rome in autumn" });
  await client.until(isIdle);
  assert.equal(await within(held.done, "the title request to end"), "aborted");
  await llm.nextChat();
  const asked = await llm.nextChat();
  assert.ok(isTitleRequest(asked.body));
  const quoted = (asked.body as Body).messages[1]!.content;
  assert.match(quoted, /about Rome in autumn/);
  assert.doesNotMatch(quoted, /Paris/);
  assert.deepEqual(await client.next("renamed"), {
    type: "renamed",
    id: 1,
    title: "Rome in autumn",
  });
  await client.send({ type: "list" });
  assert.deepEqual(
    (await client.next("conversations")).items.map((i) => i.title),
    ["Rome in autumn"],
  );
  assert.equal(llm.chats.filter((c) => isTitleRequest(c.body)).length, 2);
});
