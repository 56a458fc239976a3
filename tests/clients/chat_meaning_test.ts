/**
 * Search by meaning as chat shows it over a stand-in connection: how
 * `/search` asks, which hits came by meaning alone, the errors, and the
 * discreet sign of the daemon making old turns searchable.
 */
import assert from "node:assert/strict";
import { parseSlash } from "../../src/clients/chat_commands.ts";
import { IndexingSign } from "../../src/clients/chat_memory.ts";
import { promptShown, session } from "./chat_fixture.ts";

Deno.test("/search asks by words and meaning as the daemon chooses; --words and --meaning choose one", () => {
  assert.deepEqual(parseSlash("/search capital"), {
    kind: "request",
    wait: { kind: "search" },
    command: { type: "search", q: "capital", limit: 20 },
  });
  assert.deepEqual(parseSlash("/search --words  capital city"), {
    kind: "request",
    wait: { kind: "search" },
    command: { type: "search", q: "capital city", limit: 20, by: "words" },
  });
  assert.deepEqual(parseSlash("/search --meaning capital"), {
    kind: "request",
    wait: { kind: "search" },
    command: { type: "search", q: "capital", limit: 20, by: "meaning" },
  });
  for (const line of ["/search", "/search --words", "/search --meaning "]) {
    assert.deepEqual(parseSlash(line), {
      kind: "usage",
      text: "usage: /search [--words | --meaning] words",
    });
  }
  // Any other word is part of the query.
  assert.deepEqual(parseSlash("/search --verbose"), {
    kind: "request",
    wait: { kind: "search" },
    command: { type: "search", q: "--verbose", limit: 20 },
  });
});

Deno.test("a hit found by meaning alone says so; one its words found is marked as before", () => {
  const { chat, screen } = session({ colors: true });
  chat.submit("/search city");
  chat.onEvent({
    type: "results",
    items: [
      {
        id: 4,
        title: "Paris",
        snippet: "the **city** of light",
        text: "the city of light",
        marks: [[4, 8]],
        by: "both",
      },
      {
        id: 7,
        title: "Lima",
        snippet: "Where is Peru's seat of government?",
        text: "Where is Peru's seat of government?",
        marks: [],
        by: "meaning",
      },
    ],
    ref: "ref-1",
  });
  const dim = (text: string) => `\x1b[2m${text}\x1b[0m`;
  const lines = screen().split("\n");
  const paris = lines.findIndex((line) => line.includes("Paris"));
  const lima = lines.findIndex((line) => line.includes("Lima"));
  assert.ok(!lines[paris]!.includes("by meaning"), lines[paris]);
  assert.ok(lines[lima]!.endsWith(`Lima ${dim("(by meaning)")}`), lines[lima]);
  assert.equal(lines[lima + 1], "        Where is Peru's seat of government?");
  assert.ok(lines[paris + 1]!.includes("\x1b[1m\x1b[33mcity\x1b[0m"));
});

Deno.test("search by meaning refused says what to do instead", () => {
  const { chat, sent, screen } = session();
  chat.submit("/search --meaning capital");
  assert.equal(sent.at(-1)?.type, "search");
  chat.onEvent({
    type: "error",
    code: "meaning_off",
    message:
      "search by meaning is off: set embed_url to an embeddings endpoint",
    ref: "ref-1",
  });
  assert.match(
    screen(),
    /error: search by meaning is off: set embed_url to an embeddings endpoint \(\/search without --meaning searches by words\)\n$/,
  );
  chat.submit("/search --words capital");
  chat.onEvent({
    type: "error",
    code: "bad_by",
    message: "bad by",
    ref: "ref-2",
  });
  assert.match(
    screen(),
    /error: this daemon does not search that way: \/search without --words or --meaning\n$/,
  );
  assert.equal(chat.ready, true);
});

Deno.test("indexing shows in the prompt, and a line says when it is through, only where it was seen", () => {
  const { chat, screen } = session({
    editor: true,
    hello: { indexing: { done: 10, total: 40 } },
  });
  assert.equal(promptShown(screen()), "indexing 25%> ");
  chat.onEvent({ type: "indexing", done: 30, total: 40 });
  assert.equal(promptShown(screen()), "indexing 75%> ");
  chat.onEvent({ type: "indexing", done: 40, total: 40 });
  assert.match(screen(), /indexed 40 turns for search by meaning\n/);
  assert.equal(promptShown(screen()), "> ");
  // Each turn saved later is indexed at once: nothing more to say.
  const before = screen();
  chat.onEvent({ type: "indexing", done: 41, total: 41 });
  assert.equal(screen(), before);
  // Piped, no prompt shows the progress, so its end is not announced.
  const piped = session({ hello: { indexing: { done: 1, total: 9 } } });
  piped.chat.onEvent({ type: "indexing", done: 9, total: 9 });
  assert.doesNotMatch(piped.screen(), /index/);
});

Deno.test("indexing never writes into a streaming reply: its end is said once the reply is over", () => {
  const { chat, screen } = session({
    editor: true,
    hello: { indexing: { done: 1, total: 3 } },
  });
  chat.submit("Hello?");
  chat.onEvent({ type: "user", text: "Hello?", ref: "ref-1" });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: "Hel" });
  chat.onEvent({ type: "indexing", done: 2, total: 3 });
  chat.onEvent({ type: "indexing", done: 3, total: 3 });
  chat.onEvent({ type: "token", delta: "lo." });
  assert.ok(screen().includes("Hello."), JSON.stringify(screen()));
  assert.doesNotMatch(screen(), /indexed/);
  chat.onEvent({ type: "done", id: 1, stopped: false, ref: "ref-1" });
  chat.onEvent({ type: "state", state: "idle" });
  assert.match(screen(), /Hello\.\n\nindexed 3 turns for search by meaning\n/);
});

Deno.test("the indexing sign counts whole percents and one turn in the singular", () => {
  const sign = new IndexingSign({ done: 1, total: 3 });
  assert.equal(sign.tag(), "indexing 33%");
  sign.update({ done: 1, total: 1 });
  assert.equal(sign.tag(), null);
  assert.equal(sign.takeNote(), "indexed 1 turn for search by meaning");
  assert.equal(sign.takeNote(), null);
  // Through before anyone saw it: nothing to announce.
  const unseen = new IndexingSign({ done: 0, total: 5 });
  unseen.update({ done: 5, total: 5 });
  assert.equal(unseen.takeNote(), null);
});
