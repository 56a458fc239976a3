import assert from "node:assert/strict";
import type { SpeakMode } from "../../src/voice/settings.ts";
import type { Event } from "../../src/protocol/events.ts";
import { type SpeechControl, TurnFollower } from "../../src/voice/turns.ts";
import { hello } from "./harness.ts";

/** A follower whose speaker notes each move. */
function follower(speak: SpeakMode, own: string[] = ["mine-1"]) {
  const moves: string[] = [];
  const speech: SpeechControl = {
    begin: () => moves.push("begin"),
    text: (delta) => moves.push(`text ${delta}`),
    end: () => moves.push("end"),
    silence: () => moves.push("silence"),
  };
  const turns = new TurnFollower(speech, {
    speak,
    own: (ref) => own.includes(String(ref)),
  });
  const feed = (...events: Event[]) => {
    for (const event of events) turns.follow(event);
  };
  return { moves, feed };
}

const user = (ref?: string): Event => ({
  type: "user",
  text: "q",
  ...(ref ? { ref } : {}),
});
const token = (delta: string): Event => ({ type: "token", delta });
const done = (stopped = false): Event => ({ type: "done", id: 1, stopped });

Deno.test("speak = own: only a turn with one of the client's refs is spoken", () => {
  const { moves, feed } = follower("own");
  feed(user("chat-1"), token("theirs"), done());
  feed(user(), token("no ref"), done());
  assert.ok(!moves.includes("begin"), moves.join(", "));
  assert.ok(!moves.some((move) => move.startsWith("text")), moves.join(", "));
  feed(user("mine-1"), token("mine"), done());
  assert.deepEqual(moves.slice(-3), ["begin", "text mine", "end"]);
});

Deno.test("speak = all: every turn is spoken", () => {
  const { moves, feed } = follower("all");
  feed(user("chat-1"), token("theirs"), done(), user(), token("any"), done());
  assert.deepEqual(moves, [
    "begin",
    "text theirs",
    "end",
    "begin",
    "text any",
    "end",
  ]);
});

Deno.test("speak = all: another conversation made current silences the reply, which goes on there; reopening its own does not", () => {
  const conversation = (id: number | null): Event => ({
    type: "conversation",
    id,
    turns: [],
    summary: null,
  });
  const all = follower("all");
  all.feed(conversation(3), user(), token("one"), conversation(3));
  all.feed(token("two"), conversation(4), token("three"), done());
  assert.deepEqual(all.moves, ["begin", "text one", "text two", "silence"]);
  // A reply in an unsaved conversation, then a new one.
  const fresh = follower("all");
  fresh.feed(conversation(null), user(), token("a"), conversation(null));
  fresh.feed(token("b"), done());
  assert.deepEqual(fresh.moves, ["begin", "text a", "silence"]);
  // The first reply saves the new conversation; reopening it later is the same one.
  const saved = follower("all");
  saved.feed(conversation(null), user(), token("a"), done());
  saved.feed(user(), token("b"), conversation(1), token("c"), done());
  assert.deepEqual(saved.moves, [
    "begin",
    "text a",
    "end",
    "begin",
    "text b",
    "text c",
    "end",
  ]);
  // The client's own question is spoken wherever it was asked.
  const own = follower("own");
  own.feed(conversation(3), user("mine-1"), token("x"), conversation(4));
  own.feed(token("y"), done());
  assert.deepEqual(own.moves, ["begin", "text x", "text y", "end"]);
});

Deno.test("reasoning and tool events are never spoken", () => {
  const { moves, feed } = follower("all");
  feed(
    user(),
    { type: "think", delta: "hidden" },
    { type: "tool", name: "date", done: false },
    { type: "state", state: "tool", tool: "date" },
    token("said"),
    done(),
  );
  assert.deepEqual(moves, ["begin", "text said", "end"]);
});

Deno.test("a stop, a newer question, listening on or a new connection silences at once", () => {
  for (
    const interrupt of [
      done(true),
      user("chat-2"),
      { type: "listening", on: true },
      hello(),
    ] satisfies Event[]
  ) {
    const { moves, feed } = follower("own");
    feed(user("mine-1"), token("a"), interrupt, token("after"));
    assert.deepEqual(
      moves.slice(0, 3),
      ["begin", "text a", "silence"],
      JSON.stringify(interrupt),
    );
    assert.ok(!moves.includes("text after"), JSON.stringify(interrupt));
  }
});

Deno.test("listening off leaves a reply alone; a turn error ends it with what arrived", () => {
  const { moves, feed } = follower("all");
  feed(user(), token("a"), { type: "listening", on: false }, token("b"));
  feed({
    type: "error",
    code: "llama_stalled",
    message: "llama-server stalled",
    turn: true,
  });
  feed(token("late"));
  assert.deepEqual(moves, ["begin", "text a", "text b", "end"]);
  const other = follower("all");
  other.feed(user(), token("a"), {
    type: "error",
    code: "bad_id",
    message: "bad id",
  });
  other.feed(token("b"));
  assert.deepEqual(other.moves, ["begin", "text a", "text b"]);
});
