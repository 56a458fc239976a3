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
