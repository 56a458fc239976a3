/** Full-text search through the store: folding, prefixes, FTS5 syntax taken literally, snippets and the bounded ranking. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { Store } from "../../src/store/store.ts";
import { clock, places, turn, walrusConversation } from "./fixtures.ts";

for (const place of places) {
  Deno.test(`store (${place.name}): search folds accents, completes half-typed words and marks matches`, () => {
    try {
      using store = new Store(place.path(), { now: clock() });
      const rome = store.saveTurn(
        null,
        turn("Com'è la città di Roma?", "Bella e antica."),
      );
      const why = store.saveTurn(
        null,
        turn("Perché il cielo è blu?", "Per la diffusione di Rayleigh."),
      );
      const code = store.saveTurn(
        null,
        turn("How do I reverse a list?", "Use the reversed builtin."),
      );

      const citta = store.search("citta");
      assert.deepEqual(citta.map((h) => h.id), [rome]);
      assert.equal(citta[0]?.title, "Com'è la città di Roma?");
      assert.match(citta[0]?.snippet ?? "", /\*\*città\*\*/);
      assert.deepEqual(store.search("perche").map((h) => h.id), [why]);
      assert.deepEqual(store.search("PERCHÉ").map((h) => h.id), [why]);
      assert.deepEqual(store.search("diffus").map((h) => h.id), [why]);
      assert.deepEqual(store.search("revers").map((h) => h.id), [code]);
      assert.match(store.search("revers")[0]?.snippet ?? "", /\*\*reverse\*\*/);
      assert.deepEqual(store.search("reverse a li").map((h) => h.id), [code]);
      assert.deepEqual(store.search("list reverse"), []);
      assert.deepEqual(store.search(""), []);
      assert.deepEqual(store.search("   \n"), []);
      assert.deepEqual(store.search("zebra"), []);
    } finally {
      place.cleanup();
    }
  });
}

Deno.test("store: search returns one row per conversation, questions weighted above replies", () => {
  using store = new Store(":memory:", { now: clock() });
  const inQuestion = store.saveTurn(
    null,
    turn("Which volcano erupted in 79?", "Vesuvius did, burying Pompeii."),
  );
  const inReply = store.saveTurn(
    null,
    turn("Tell me about Naples", "It lies under a volcano, Vesuvius."),
  );
  // Several matching turns in one conversation still make one result.
  store.saveTurn(inReply, turn("More?", "Another volcano: Campi Flegrei."));
  store.saveTurn(inReply, turn("More?", "Yes, a volcano again."));

  const hits = store.search("volcano");
  assert.deepEqual(hits.map((h) => h.id), [inQuestion, inReply]);
  assert.match(hits[0]?.snippet ?? "", /\*\*volcano\*\*/);
  assert.deepEqual(store.search("volcano", 1).map((h) => h.id), [inQuestion]);
});

Deno.test("store: a long pasted passage finds its turn", () => {
  using store = new Store(":memory:");
  const passage = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
  const id = store.saveTurn(null, turn("Summarize this", `Quote: ${passage}.`));
  store.saveTurn(null, turn("Other", "w0 w1 w2 w3 and then something else"));
  assert.deepEqual(store.search(passage).map((h) => h.id), [id]);
  // Every word counts, however long the query: a different ending finds nothing.
  assert.deepEqual(store.search(`"${passage}" OR x`), []);
  assert.deepEqual(store.search(`${passage.replace("w39", "ten")}`), []);
});

Deno.test("store: a snippet is cut around the match with an ellipsis", () => {
  using store = new Store(":memory:");
  const words = Array.from({ length: 80 }, (_, i) => `word${i}`);
  words[40] = "needle";
  store.saveTurn(null, turn("A long one", words.join(" ")));
  const [hit] = store.search("needle");
  assert.ok(hit);
  assert.match(hit.snippet, /^….*\*\*needle\*\*.*…$/);
  assert.ok(hit.snippet.split(" ").length <= 12);
});

/** Folds and splits text the way unicode61 with remove_diacritics does, for plain Latin text. */
function tokens(text: string): string[] {
  return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase()
    .match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Whether `text` holds the query's tokens as one phrase, the last one as a prefix. */
function literally(text: string, q: string): boolean {
  const want = tokens(q);
  const have = tokens(text);
  if (want.length === 0) return false;
  const last = want.length - 1;
  for (let i = 0; i + last < have.length; i++) {
    if (
      want.every((w, j) =>
        j === last ? have[i + j]?.startsWith(w) : have[i + j] === w
      )
    ) return true;
  }
  return false;
}

const HOSTILE_CORPUS: [string, string][] = [
  ["secret plans for user", "the answer is near the end"],
  ["apples or pears", "apples and pears, not plums"],
  ["a or b", "literally the words a or b"],
  ["NEAR the station", "turn left near the bridge"],
  ["reply: hello", "user: greetings, see x"],
  ["star * power", 'quote " inside'],
  ["minus -x", "caret ^start and (paren)"],
];

const HOSTILE_QUERIES = [
  '"',
  '""',
  '"""',
  "*",
  "**",
  "NEAR(",
  "NEAR(apples pears)",
  "NEAR(apples pears, 2)",
  "apples OR pears",
  "a OR b",
  "apples AND pears",
  "apples NOT plums",
  "-x",
  "minus -x",
  "^start",
  "^the",
  "user:",
  "user: secret",
  "reply:hello",
  "{user reply}: answer",
  ")",
  "(",
  "(paren",
  '"unbalanced',
  'unbalanced"',
  'pears" OR "plums',
  "the*",
  "+",
  ":",
  "\0",
  "near\0the",
  "\uD800",
  "...",
  "—",
  "😀",
];

Deno.test("store: FTS syntax in a query never raises and matches only the literal text", () => {
  using store = new Store(":memory:", { now: clock() });
  const ids = HOSTILE_CORPUS.map(([u, r]) => store.saveTurn(null, turn(u, r)));
  for (const q of HOSTILE_QUERIES) {
    const expected = ids.filter((_, i) => {
      const [u, r] = HOSTILE_CORPUS[i] ?? ["", ""];
      return literally(u, q) || literally(r, q);
    });
    const found = store.search(q).map((h) => h.id).sort((a, b) => a - b);
    assert.deepEqual(found, expected, `query ${JSON.stringify(q)}`);
  }
  // "a OR b" as syntax would match every turn holding an "a" word.
  assert.equal(store.search("a OR b").length, 1);
});

Deno.test("store: random strings of FTS syntax never raise and never widen the match", () => {
  using store = new Store(":memory:", { now: clock() });
  const ids = HOSTILE_CORPUS.map(([u, r]) => store.saveTurn(null, turn(u, r)));
  const pieces = [
    '"',
    "*",
    "(",
    ")",
    ":",
    "^",
    "-",
    "+",
    "{",
    "}",
    ",",
    " ",
    " OR ",
    " AND ",
    " NOT ",
    "NEAR",
    "user",
    "reply",
    "apples",
    "pears",
    "a",
    "the",
    "x",
  ];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  for (let n = 0; n < 500; n++) {
    let q = "";
    const length = 1 + (next() % 8);
    for (let i = 0; i < length; i++) q += pieces[next() % pieces.length];
    const found = store.search(q).map((h) => h.id);
    for (const id of found) {
      const [u, r] = HOSTILE_CORPUS[ids.indexOf(id)] ?? ["", ""];
      assert.ok(
        literally(u, q) || literally(r, q),
        `query ${JSON.stringify(q)} matched conversation ${id}`,
      );
    }
  }
});

Deno.test("store: a deleted conversation is not found when a query matches too many turns to rank", () => {
  // rankCap 2: five matches take the newest-first path of the search.
  using store = new Store(":memory:", { now: clock(), rankCap: 2 });
  const kept = store.saveTurn(null, turn("otter kept", "Stays."));
  const gone = walrusConversation(store, 4);
  for (let i = 0; i < 4; i++) store.saveTurn(gone, turn(`otter ${i}`, "Gone."));
  assert.deepEqual(store.search("otter").map((h) => h.id), [gone, kept]);
  assert.equal(store.delete(gone), true);
  assert.deepEqual(store.search("otter").map((h) => h.id), [kept]);
});

Deno.test("store: bounded search ranks by bm25 under the cap and lists the newest past it", () => {
  // The oldest conversation is the best match (the word twice in its
  // question); twenty weaker ones follow (the word once, in ever longer
  // replies), then one asking about it, then one more reply.
  const build = (rankCap: number) => {
    const store = new Store(":memory:", { now: clock(), rankCap });
    const best = store.saveTurn(null, turn("kiwi kiwi", "A fruit."));
    const weak: number[] = [];
    for (let i = 0; i < 20; i++) {
      weak.push(
        store.saveTurn(
          null,
          turn(`question ${i}`, `a long reply ${"filler ".repeat(i)} kiwi`),
        ),
      );
    }
    const asked = store.saveTurn(null, turn("Is a kiwi a bird?", "Also."));
    const latest = store.saveTurn(
      null,
      turn("fruit salad", `${"filler ".repeat(30)} kiwi`),
    );
    return { store, best, weak, asked, latest };
  };

  {
    // 23 matches under a cap of 23: bm25 over the whole history.
    const { store, best, weak, asked, latest } = build(23);
    using _ = store;
    const hits = store.search("kiwi", 50).map((h) => h.id);
    assert.equal(hits.length, 23);
    assert.deepEqual(hits.slice(0, 2), [best, asked]);
    // Among the replies, shorter ones rank higher.
    assert.deepEqual(hits.filter((id) => weak.includes(id)), weak);
    assert.equal(hits.at(-1), latest);
    assert.deepEqual(store.search("kiwi", 3).map((h) => h.id), [
      best,
      asked,
      weak[0],
    ]);
  }
  {
    // 23 matches over a cap of 22: the newest matching conversations.
    const { store, best, weak, asked, latest } = build(22);
    using _ = store;
    const hits = store.search("kiwi", 10).map((h) => h.id);
    assert.deepEqual(hits, [latest, asked, ...weak.slice(12).reverse()]);
    assert.ok(!hits.includes(best));
    assert.equal(store.search("kiwi", 50).length, 23);
    assert.equal(store.search("kiwi", 50).at(-1)?.id, best);
    // A query narrow enough to fall under the cap is ranked again.
    assert.deepEqual(store.search("kiwi kiwi").map((h) => h.id), [best]);
    assert.match(store.search("kiwi", 1)[0]?.snippet ?? "", /\*\*kiwi\*\*/);
  }
});

Deno.test("store: a query slow to count is listed newest first", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    {
      using store = new Store(path, { now: clock() });
      store.saveTurn(null, turn("green tea, green tea", "Gold."));
      store.saveTurn(null, turn("coffee", "Black."));
      store.saveTurn(null, turn("some green tea again", "Yes."));
    }
    // A zero budget: every query counts as slow.
    using slow = new Store(path, { budgetMs: 0 });
    assert.deepEqual(slow.search("green tea", 10).map((h) => h.id), [3, 1]);
    using quick = new Store(path, { budgetMs: 60_000 });
    assert.deepEqual(quick.search("green tea", 10).map((h) => h.id), [1, 3]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a phrase whose count runs out of time searches the newest turns only", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using cut = new Store(path, { now: clock(), budgetMs: 0 });
    const old = cut.saveTurn(null, turn("green tea, green tea", "Gold."));
    const filler = cut.saveTurn(null, turn("filler", "nothing"));
    // More turns than the first range a phrase is counted in.
    const raw = new DatabaseSync(path);
    raw.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
                                    WHERE i < 16400)
              INSERT INTO turns(conv, seq, user, reply, tools, messages)
              SELECT ${filler}, i + 1, 'filler', 'nothing', '[]', '[]' FROM n`);
    raw.close();
    const recent = cut.saveTurn(null, turn("some green tea again", "Yes."));

    assert.deepEqual(cut.search("green tea", 10).map((h) => h.id), [recent]);
    // A single word is never cut short.
    assert.deepEqual(cut.search("green", 10).map((h) => h.id), [recent, old]);
    using full = new Store(path, { budgetMs: 60_000 });
    assert.deepEqual(full.search("green tea", 10).map((h) => h.id), [
      old,
      recent,
    ]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a long conversation past the cap does not hide the others", () => {
  using store = new Store(":memory:", { now: clock(), rankCap: 4 });
  const other = store.saveTurn(null, turn("lemon tart", "Bake it."));
  const long = store.saveTurn(null, turn("lemon", "Lemons."));
  for (let i = 0; i < 10; i++) store.saveTurn(long, turn("lemon", "More."));
  const hits = store.search("lemon", 5).map((h) => h.id);
  assert.deepEqual([...hits].sort((a, b) => a - b), [other, long]);
});
