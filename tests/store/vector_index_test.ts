import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { decodeVector, encodeVector } from "../../src/store/vector_codec.ts";
import {
  prepareVectors,
  type VectorHit,
  type VectorOptions,
  vectorsSource,
} from "../../src/store/vector_index.ts";
import { Random } from "../bench/history_gen.ts";

const MODEL = "tiny-embed";

/** A history file with the tables the index reads, a writer and a read-only reader. */
function history(): {
  writer: DatabaseSync;
  reader: DatabaseSync;
  path: string;
  add(turn: number, conv: number, vector: Float32Array, model?: string): void;
  addTurn(turn: number, conv: number): void;
} & Disposable {
  const dir = Deno.makeTempDirSync();
  const path = join(dir, "history.db");
  const writer = new DatabaseSync(path);
  writer.exec(`PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;
    CREATE TABLE conversations(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT);
    CREATE TABLE turns(id INTEGER PRIMARY KEY,
      conv INTEGER REFERENCES conversations ON DELETE CASCADE, user TEXT);
    CREATE TABLE deleted_conversations(
      id INTEGER PRIMARY KEY REFERENCES conversations ON DELETE CASCADE);
    CREATE TABLE vectors(turn INTEGER PRIMARY KEY REFERENCES turns ON DELETE CASCADE,
      model TEXT NOT NULL, dim INTEGER NOT NULL, data BLOB NOT NULL);`);
  const reader = new DatabaseSync(path, { readOnly: true });
  return {
    writer,
    reader,
    path,
    addTurn(turn, conv) {
      writer.prepare("INSERT OR IGNORE INTO conversations(id) VALUES (?)")
        .run(conv);
      writer.prepare("INSERT OR IGNORE INTO turns(id, conv) VALUES (?, ?)")
        .run(turn, conv);
    },
    add(turn, conv, vector, model = MODEL) {
      this.addTurn(turn, conv);
      writer.prepare(
        "INSERT OR REPLACE INTO vectors(turn, model, dim, data) VALUES (?, ?, ?, ?)",
      ).run(turn, model, vector.length, encodeVector(vector));
    },
    [Symbol.dispose]() {
      reader.close();
      writer.close();
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

function randomVector(random: Random, dim: number): Float32Array {
  return Float32Array.from({ length: dim }, () => random.next() * 2 - 1);
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

/** `count` random vectors on turns 1…count, ten turns a conversation; returns them by turn. */
function fill(
  h: ReturnType<typeof history>,
  count: number,
  dim: number,
  seed = 7,
): Map<number, Float32Array> {
  const random = new Random(seed);
  const stored = new Map<number, Float32Array>();
  h.writer.exec("BEGIN");
  for (let turn = 1; turn <= count; turn++) {
    const vector = randomVector(random, dim);
    h.add(turn, Math.ceil(turn / 10), vector);
    stored.set(turn, vector);
  }
  h.writer.exec("COMMIT");
  return stored;
}

function turns(hits: VectorHit[]): number[] {
  return hits.map((hit) => hit.turn);
}

Deno.test("vector codec: round-trips within half a step of max|v|/127, in dim + 4 bytes", () => {
  const random = new Random(3);
  for (const dim of [1, 7, 768]) {
    const vector = randomVector(random, dim).map((x) => x * 40);
    const blob = encodeVector(vector);
    assert.equal(blob.length, dim + 4);
    const back = decodeVector(blob, dim);
    const top = Math.max(...vector.map(Math.abs));
    for (let i = 0; i < dim; i++) {
      assert.ok(
        Math.abs(back[i]! - vector[i]!) <= top / 254 * 1.0001,
        `component ${i} of ${dim}: ${vector[i]} came back as ${back[i]}`,
      );
    }
  }
  assert.deepEqual(
    decodeVector(encodeVector(new Float32Array(3)), 3),
    new Float32Array(3),
  );
  assert.throws(
    () => encodeVector(Float32Array.of(1, NaN)),
    /component 1 is NaN/,
  );
  assert.throws(() => decodeVector(new Uint8Array(10), 8), TypeError);
});

Deno.test("vector index: the stored vector nearest a query comes first, then cosine order", () => {
  using h = history();
  const stored = fill(h, 300, 64);
  const search = prepareVectors(h.reader);
  assert.equal(search.count(MODEL), 300);

  const random = new Random(11);
  for (const target of [5, 150, 300]) {
    const query = stored.get(target)!.map((x) =>
      x + (random.next() - 0.5) * 0.2
    );
    const hits = search.search(query, MODEL, 20);
    assert.equal(hits.length, 20);
    assert.equal(hits[0]!.turn, target);
    assert.equal(hits[0]!.conv, Math.ceil(target / 10));
    // Exactly the 20 best by cosine over the stored bytes, best first.
    const exact = [...stored.keys()]
      .map((turn) => ({
        turn,
        score: cosine(
          query,
          decodeVector(
            encodeVector(stored.get(turn)!),
            64,
          ),
        ),
      }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 20);
    assert.deepEqual(turns(hits), exact.map((e) => e.turn));
    hits.forEach((hit, i) =>
      assert.ok(Math.abs(hit.score - exact[i]!.score) < 1e-5)
    );
  }
});

Deno.test("vector index: with few candidates kept, 768 dimensions, the nearest still comes first", () => {
  using h = history();
  const stored = fill(h, 2000, 768);
  // 32 of 2000 pass the bit prefilter and 8 are read again from SQLite.
  const search = prepareVectors(h.reader, { candidates: 32, rescore: 8 });
  const random = new Random(13);
  for (const target of [1, 777, 1500, 2000]) {
    const query = stored.get(target)!.map((x) => x + (random.next() - 0.5) * 2);
    assert.equal(search.search(query, MODEL, 1)[0]?.turn, target);
  }
});

Deno.test("vector index: only vectors of the model asked; counts per model", () => {
  using h = history();
  const random = new Random(5);
  const query = randomVector(random, 16);
  h.add(1, 1, query, "model-a");
  h.add(2, 1, randomVector(random, 16), "model-b");
  h.add(3, 2, randomVector(random, 16), "model-b");
  const search = prepareVectors(h.reader);
  assert.deepEqual(turns(search.search(query, "model-a", 10)), [1]);
  assert.deepEqual(turns(search.search(query, "model-b", 10)).sort(), [2, 3]);
  assert.deepEqual(search.search(query, "model-c", 10), []);
  assert.equal(search.count("model-a"), 1);
  assert.equal(search.count("model-b"), 2);
  assert.equal(search.count("model-c"), 0);

  // A new model's vector replaces turn 1's in place (one row per turn).
  h.add(1, 1, query, "model-b");
  assert.deepEqual(search.search(query, "model-a", 10), []);
  search.refresh();
  assert.equal(search.count("model-a"), 0);
  assert.equal(search.count("model-b"), 3);
  assert.equal(search.search(query, "model-b", 1)[0]?.turn, 1);
});

Deno.test("vector index: rows written after it was built are found", () => {
  using h = history();
  const stored = fill(h, 50, 32);
  h.add(1000, 100, randomVector(new Random(1), 32));
  const search = prepareVectors(h.reader, { sweepMs: Infinity });
  const random = new Random(9);

  // A new turn's vector, above every turn known: found by the next search.
  const fresh = randomVector(random, 32);
  h.add(1001, 100, fresh);
  assert.equal(search.search(fresh, MODEL, 1)[0]?.turn, 1001);

  // Vectors for 300 older turns (a backlog worked below the newest): found
  // once the sweep has run.
  const late = new Map<number, Float32Array>();
  h.writer.exec("BEGIN");
  for (let turn = 100; turn < 400; turn++) {
    late.set(turn, randomVector(random, 32));
    h.add(turn, Math.ceil(turn / 10), late.get(turn)!);
  }
  h.writer.exec("COMMIT");
  search.refresh();
  assert.equal(search.count(MODEL), stored.size + 2 + late.size);
  for (const [turn, vector] of late) {
    const [best] = search.search(vector, MODEL, 1);
    assert.deepEqual([best?.turn, best?.conv], [turn, Math.ceil(turn / 10)]);
  }

  // With sweeps always due, the next search finds such a row by itself.
  const eager = prepareVectors(h.reader, { sweepMs: 0 });
  const older = randomVector(random, 32);
  h.add(70, 7, older);
  assert.equal(eager.search(older, MODEL, 1)[0]?.turn, 70);

  // Two indexes on one connection keep their own bookkeeping.
  const another = randomVector(random, 32);
  h.add(80, 8, another);
  search.refresh();
  assert.equal(search.count(MODEL), stored.size + 2 + late.size + 2);
  assert.equal(search.search(another, MODEL, 1)[0]?.turn, 80);
});

Deno.test("vector index: deleted rows and deleted conversations are never answered", () => {
  using h = history();
  const stored = fill(h, 40, 24);
  const search = prepareVectors(h.reader, { sweepMs: Infinity });
  const query = stored.get(7)!;
  assert.equal(search.search(query, MODEL, 1)[0]?.turn, 7);

  // The turn goes, and its vector with it (ON DELETE CASCADE).
  h.writer.exec("DELETE FROM turns WHERE id = 7");
  const after = search.search(query, MODEL, 40);
  assert.ok(!turns(after).includes(7));
  assert.equal(after.length, 39);

  // Conversation 2 (turns 11–20) deleted: gone at once, before its rows are.
  h.writer.exec("INSERT INTO deleted_conversations(id) VALUES (2)");
  const left = search.search(stored.get(15)!, MODEL, 40);
  assert.ok(left.every((hit) => hit.conv !== 2));
  assert.equal(left.length, 29);
  assert.equal(search.count(MODEL), 29);

  // A row deleted without a search meeting it is forgotten by the sweep.
  h.writer.exec("DELETE FROM vectors WHERE turn = 33");
  search.refresh();
  assert.equal(search.count(MODEL), 28);
});

Deno.test("vector index: a turn id used again, or a turn replaced, is read anew once named: its new vector and conversation, never the old ones", () => {
  using h = history();
  const stored = fill(h, 200, 32);
  // Few candidates: the sign bits in memory decide what is rescored.
  const search = prepareVectors(h.reader, {
    candidates: 4,
    rescore: 4,
    sweepMs: Infinity,
  });
  const random = new Random(21);
  // Turn 200 (conversation 20) deleted, and its id given to a turn of
  // conversation 30 with another vector; turn 150 replaced in place.
  h.writer.exec("DELETE FROM turns WHERE id = 200");
  const reused = randomVector(random, 32);
  h.add(200, 30, reused);
  const replaced = stored.get(150)!.map((x) => -x);
  h.add(150, 15, replaced);
  search.update([200, 150]);
  assert.deepEqual(
    search.search(reused, MODEL, 1).map((hit) => [hit.turn, hit.conv]),
    [[200, 30]],
  );
  assert.deepEqual(turns(search.search(replaced, MODEL, 1)), [150]);
  // Its conversation is the new one: leaving out the old one keeps it.
  assert.deepEqual(turns(search.search(reused, MODEL, 1, 20)), [200]);
  assert.notEqual(search.search(reused, MODEL, 1, 30)[0]?.turn, 200);
  // Gone since: forgotten, and a turn above the newest is left to the
  // next search.
  h.writer.exec("DELETE FROM turns WHERE id = 150");
  search.update([150, 5000]);
  assert.equal(search.count(MODEL), 199);
});

Deno.test("vector index: read lazily, a slice at a time, it answers as one read at once", () => {
  using h = history();
  const stored = fill(h, 500, 16);
  const lazy = prepareVectors(h.reader, { lazy: true });
  let slices = 0;
  while (lazy.load(0)) slices++;
  assert.ok(slices >= 500 / 64 - 1, `${slices} slices`);
  assert.equal(lazy.load(0), false);
  assert.equal(lazy.count(MODEL), 500);
  const query = stored.get(321)!;
  assert.deepEqual(
    lazy.search(query, MODEL, 5),
    prepareVectors(h.reader).search(query, MODEL, 5),
  );
  // A row deleted below what was read, and one added above, while reading.
  const again = prepareVectors(h.reader, { lazy: true, sweepMs: Infinity });
  assert.equal(again.load(0), true);
  h.writer.exec("DELETE FROM vectors WHERE turn = 3");
  h.add(900, 90, randomVector(new Random(4), 16));
  while (again.load(0));
  again.refresh();
  assert.equal(again.count(MODEL), 500);
  // A search before the reading is through reads the rest first.
  const early = prepareVectors(h.reader, { lazy: true });
  assert.equal(early.search(query, MODEL, 1)[0]?.turn, 321);
});

Deno.test("vector index: exclude leaves one conversation out", () => {
  using h = history();
  const stored = fill(h, 60, 24);
  const search = prepareVectors(h.reader);
  const query = stored.get(25)!;
  const all = search.search(query, MODEL, 60);
  assert.equal(all[0]?.turn, 25);
  const others = search.search(query, MODEL, 60, 3);
  assert.ok(others.every((hit) => hit.conv !== 3));
  assert.deepEqual(others, all.filter((hit) => hit.conv !== 3));
});

Deno.test("vector index: an empty table answers nothing; vectors of another dimension are no answer, never an error", () => {
  using h = history();
  const empty = prepareVectors(h.reader);
  assert.deepEqual(empty.search(new Float32Array(8).fill(1), MODEL, 10), []);
  assert.equal(empty.count(MODEL), 0);

  fill(h, 5, 8);
  const search = prepareVectors(h.reader);
  // The same model's name with another dimension: the old vectors, which
  // the indexer makes again; until then a query of the new size finds none.
  assert.deepEqual(search.search(new Float32Array(5).fill(1), MODEL, 10), []);
  const renewed = randomVector(new Random(2), 5);
  h.add(3, 1, renewed);
  search.refresh();
  assert.deepEqual(turns(search.search(renewed, MODEL, 10)), [3]);
  assert.equal(search.search(new Float32Array(8).fill(1), MODEL, 10).length, 4);
  assert.throws(
    () => search.search(Float32Array.of(1, 2, 3, NaN, 0, 0, 0, 0), MODEL, 10),
    TypeError,
  );
  assert.deepEqual(search.search(new Float32Array(8), MODEL, 10), []);
});

Deno.test("vector index: runs from its source text in a worker", async () => {
  using h = history();
  const stored = fill(h, 120, 48);
  const options: VectorOptions = { candidates: 64, rescore: 16 };
  const source = `import { DatabaseSync } from "node:sqlite";
    const prepare = ${vectorsSource()};
    onmessage = ({ data }) => {
      const db = new DatabaseSync(data.path, { readOnly: true });
      const search = prepare(db, data.options);
      postMessage(search.search(data.query, data.model, 5));
      db.close();
    };`;
  const url = URL.createObjectURL(
    new Blob([source], { type: "application/javascript" }),
  );
  const worker = new Worker(url, { type: "module" });
  try {
    const answer = Promise.withResolvers<VectorHit[]>();
    worker.onmessage = (event) => answer.resolve(event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      answer.reject(new Error(event.message));
    };
    const query = stored.get(42)!;
    worker.postMessage({ path: h.path, options, query, model: MODEL });
    const hits = await answer.promise;
    assert.equal(hits[0]?.turn, 42);
    assert.deepEqual(
      hits,
      prepareVectors(h.reader, options).search(query, MODEL, 5),
    );
  } finally {
    worker.terminate();
    URL.revokeObjectURL(url);
  }
});
