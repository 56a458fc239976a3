import assert from "node:assert/strict";
import { playTurn, promptShown, session } from "./chat_fixture.ts";
import type { Event } from "../../src/protocol/protocol.ts";

Deno.test("chat waits for the turn of its own question by its ref, even behind the same question from elsewhere", () => {
  const { chat, sent } = session();
  assert.equal(chat.ready, true);
  chat.submit("Mine?");
  assert.deepEqual(sent, [{ type: "ask", text: "Mine?", ref: "ref-1" }]);
  const events: Event[] = [
    // Another client's identical question, then its stop by ours.
    { type: "user", text: "Mine?", ref: "theirs" },
    { type: "state", state: "thinking" },
    { type: "done", id: null, stopped: true, ref: "theirs" },
    { type: "state", state: "idle" },
  ];
  for (const event of events) chat.onEvent(event);
  assert.equal(chat.ready, false, "our question is still to come");
  chat.onEvent({ type: "user", text: "Mine?", ref: "ref-1" });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: "Yours." });
  assert.equal(chat.ready, false);
  chat.onEvent({ type: "done", id: 1, stopped: false, ref: "ref-1" });
  chat.onEvent({ type: "state", state: "idle" });
  assert.equal(chat.ready, true);
});

Deno.test("a private conversation keeps a sign in the prompt while it lasts", () => {
  const { chat, screen, sent } = session({ editor: true });
  assert.equal(promptShown(screen()), "> ");
  chat.submit("/private");
  assert.deepEqual(sent.at(-1), { type: "new", private: true, ref: "ref-1" });
  chat.onEvent({
    type: "conversation",
    id: null,
    turns: [],
    private: true,
    ref: "ref-1",
  });
  assert.equal(promptShown(screen()), "private> ");
  playTurn(chat, "Secret?", undefined, "Kept.");
  assert.equal(promptShown(screen()), "private> ");
  // Another conversation, from this chat or any other: the sign goes.
  chat.onEvent({ type: "conversation", id: 3, turns: [] });
  assert.equal(promptShown(screen()), "> ");
  // A chat that connects to a private conversation shows it at once.
  const late = session({ editor: true, hello: { private: true } });
  assert.equal(promptShown(late.screen()), "private> ");
});

Deno.test("an answer already given elsewhere is matched by its code, whatever its message says", () => {
  const { chat, screen } = session();
  chat.onEvent({
    type: "confirm",
    call: "c1",
    tool: "weather",
    args: { place: "Oslo" },
  });
  chat.submit("y");
  chat.onEvent({
    type: "error",
    code: "no_such_call",
    message: "that call was settled a moment ago",
  });
  assert.doesNotMatch(screen(), /error:/);
  // Text alone decides nothing: another code is an error to show.
  chat.onEvent({ type: "error", code: "bad_call", message: "no such call" });
  assert.match(screen(), /error: no such call/);
});

Deno.test("/search marks the matches the daemon names, never a reply's own **bold**", () => {
  const { chat, screen, sent } = session({ colors: true });
  chat.submit("/search cat");
  assert.deepEqual(sent.at(-1), {
    type: "search",
    q: "cat",
    limit: 20,
    ref: "ref-1",
  });
  const marked = (text: string) => `\x1b[1m\x1b[33m${text}\x1b[0m`;
  chat.onEvent({
    type: "results",
    items: [
      {
        id: 4,
        title: "Pets",
        snippet: "my **cat** is **very** fluffy",
        text: "my cat is **very** fluffy",
        marks: [[3, 6]],
      },
      // A daemon without marks: the snippet's markers still show the match.
      { id: 2, title: "Older", snippet: "a **cat** nap" },
    ],
    ref: "ref-1",
  });
  assert.ok(
    screen().includes(`my ${marked("cat")} is **very** fluffy`),
    JSON.stringify(screen()),
  );
  assert.ok(screen().includes(`a ${marked("cat")} nap`), screen());
  assert.equal(chat.ready, true);
});

Deno.test("after each reply a dim line gives its speed and the prompt read and reused", () => {
  const { chat, screen } = session();
  chat.submit("Fast?");
  chat.onEvent({ type: "user", text: "Fast?", ref: "ref-1" });
  chat.onEvent({ type: "token", delta: "Yes." });
  chat.onEvent({
    type: "done",
    id: 1,
    stopped: false,
    timings: {
      prompt_n: 35,
      cache_n: 1480,
      predicted_n: 60,
      prompt_ms: 700,
      predicted_ms: 5000,
    },
    ref: "ref-1",
  });
  chat.onEvent({ type: "state", state: "idle" });
  assert.ok(
    screen().includes("Yes.\n12 tokens/s · prompt 35 read, 1,480 reused\n\n"),
    JSON.stringify(screen()),
  );
  // A server that reports none: no line.
  playTurn(chat, "Again?", undefined, "Sure.");
  assert.ok(screen().endsWith("Sure.\n\n"), JSON.stringify(screen()));
});

Deno.test("/summary shows the summary the daemon made, and a note says when it grows", () => {
  const { chat, screen, sent } = session({
    turns: [{ user: "Old?", reply: "Old.", tools: [] }],
  });
  // Connected after any summary was made: the export of the conversation has it.
  chat.submit("/summary");
  assert.deepEqual(sent.at(-1), {
    type: "export",
    id: 1,
    format: "json",
    ref: "ref-1",
  });
  assert.equal(chat.ready, false);
  chat.onEvent({
    type: "export",
    id: 1,
    format: "json",
    text: JSON.stringify({
      format: "desktop-assistant/1",
      id: 1,
      summary: { text: "We spoke of Lisbon.", turns: 4 },
      turns: [],
    }),
    ref: "ref-1",
  });
  assert.equal(chat.ready, true);
  assert.match(
    screen(),
    /summary of the 4 earlier turns:\nWe spoke of Lisbon\.\n/,
  );
  // Once known it is kept up to date from the events: no second request.
  chat.onEvent({
    type: "summary",
    id: 1,
    text: "Lisbon, then Porto.",
    turns: 6,
  });
  assert.match(
    screen(),
    /\[the summary now covers 6 earlier turns · \/summary shows it\]\n/,
  );
  chat.submit("/summary");
  assert.equal(sent.length, 1);
  assert.match(
    screen(),
    /summary of the 6 earlier turns:\nLisbon, then Porto\.\n/,
  );
  // Another conversation's summary is not this one's.
  chat.onEvent({ type: "summary", id: 9, text: "Elsewhere.", turns: 2 });
  assert.doesNotMatch(screen(), /covers 2 earlier/);
  // A conversation opened says whether it has one.
  chat.onEvent({
    type: "conversation",
    id: 2,
    turns: [{ user: "Q", reply: "A", tools: [] }],
    summary: null,
  });
  chat.submit("/summary");
  assert.equal(sent.length, 1);
  assert.match(
    screen(),
    /no summary: the model is sent this conversation's turns as they are\n$/,
  );
  assert.equal(chat.ready, true);
});

Deno.test("/talk turns listening on and off; the prompt says listening meanwhile", () => {
  const { chat, screen, sent } = session({ editor: true });
  chat.submit("/talk");
  assert.deepEqual(sent.at(-1), { type: "listen", on: true, ref: "ref-1" });
  assert.equal(chat.ready, false);
  chat.onEvent({ type: "listening", on: true, ref: "ref-1" });
  assert.equal(chat.ready, true);
  assert.equal(promptShown(screen()), "listening> ");
  assert.match(screen(), /\[listening: speak your question; \/talk stops\]/);
  chat.submit("/talk");
  assert.deepEqual(sent.at(-1), { type: "listen", on: false, ref: "ref-2" });
  chat.onEvent({ type: "listening", on: false, ref: "ref-2" });
  assert.equal(promptShown(screen()), "> ");
  // Another client (a desktop hotkey) starts it: the sign shows all the same.
  chat.onEvent({ type: "listening", on: true, ref: "hotkey" });
  assert.equal(promptShown(screen()), "listening> ");
  // A chat that connects while the voice client listens knows it.
  const late = session({ editor: true, hello: { listening: true } });
  assert.equal(promptShown(late.screen()), "listening> ");
  late.chat.submit("/talk");
  assert.deepEqual(late.sent.at(-1), {
    type: "listen",
    on: false,
    ref: "ref-1",
  });
});

Deno.test("/talk to a daemon without listening shows its error as it is, and the prompt comes back", () => {
  const { chat, screen, sent } = session({ editor: true });
  chat.submit("/talk");
  assert.deepEqual(sent.at(-1), { type: "listen", on: true, ref: "ref-1" });
  chat.onEvent({
    type: "error",
    code: "unknown_command",
    message: "unknown command listen",
    ref: "ref-1",
  });
  assert.match(screen(), /error: unknown command listen\n/);
  assert.equal(chat.ready, true);
  assert.equal(promptShown(screen()), "> ");
});
