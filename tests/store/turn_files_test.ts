/** A turn's files in the history: kept in its transaction, replaced with it, found by search, and gone with it. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { Store, type StoredFile } from "../../src/store/store.ts";
import { clock, tempDir, turn } from "./fixtures.ts";

const encode = (s: string) => new TextEncoder().encode(s);
const PICTURE: StoredFile = {
  name: "red.png",
  mime: "image/png",
  bytes: 4,
  kind: "image",
  text: null,
  data: new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
};
const NOTES: StoredFile = {
  name: "walrus notes.txt",
  mime: "text/plain",
  bytes: 25,
  kind: "text",
  text: "Walruses haul out on ice.",
  data: null,
};

function rows(path: string, sql: string): Record<string, unknown>[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare(sql).all();
  } finally {
    db.close();
  }
}

Deno.test("a turn's files open in order with their text, a picture's bytes read when asked for", () => {
  using dir = tempDir();
  using store = new Store(join(dir.dir, "h.db"), { now: clock() });
  const id = store.saveTurn(null, {
    ...turn("Look", "Seen."),
    files: [NOTES, PICTURE],
  });
  store.saveTurn(id, turn("Plain", "Yes."));
  const opened = store.open(id)!;
  assert.deepEqual(opened.turns[0]?.files, [
    { name: "walrus notes.txt", mime: "text/plain", bytes: 25, kind: "text" },
    { name: "red.png", mime: "image/png", bytes: 4, kind: "image" },
  ]);
  assert.equal(opened.turns[1]?.files, undefined);
  assert.equal(opened.files[0]?.[0]?.text, NOTES.text);
  assert.equal(opened.files[0]?.[1]?.data, null, "bytes only when asked");
  assert.deepEqual(store.fileData(opened.rows[0]!, 1), PICTURE.data);
  assert.deepEqual(store.fileAt(id, 0, 1)?.data, PICTURE.data);
  assert.deepEqual(store.fileAt(id, 0, 0)?.data, encode(NOTES.text!));
  assert.equal(store.fileAt(id, 1, 0), null);
  assert.equal(store.fileAt(id, 2, 0), null);
});

Deno.test("a retry's turn replaces the files with its own", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = store.saveTurn(null, { ...turn("Look", "Seen."), files: [NOTES] });
  store.replaceLastTurn(id, { ...turn("Look", "Again."), files: [PICTURE] });
  assert.deepEqual(store.open(id)!.turns[0]?.files?.map((f) => f.name), [
    "red.png",
  ]);
  assert.equal(store.search("walrus").length, 0, "the old text is unindexed");
  store.replaceLastTurn(id, turn("Look", "Bare."));
  assert.equal(store.open(id)!.turns[0]?.files, undefined);
});

Deno.test("a picture's bytes go with its turn: replaced by a retry, deleted with the conversation", () => {
  using dir = tempDir();
  const path = join(dir.dir, "h.db");
  using store = new Store(path, { now: clock() });
  const bytes = () =>
    rows(path, "SELECT count(*) AS n FROM turn_files WHERE data IS NOT NULL")[0]
      ?.n;
  const id = store.saveTurn(null, {
    ...turn("Look", "Red."),
    files: [PICTURE],
  });
  assert.equal(bytes(), 1);
  store.replaceLastTurn(id, turn("Look", "Plain."));
  assert.equal(bytes(), 0, "the replaced turn's picture is gone");
  store.replaceLastTurn(id, { ...turn("Look", "Red."), files: [PICTURE] });
  assert.ok(store.delete(id));
  while (store.maintain()) { /* upkeep to the end */ }
  assert.equal(bytes(), 0, "the deleted conversation's picture is gone");
  assert.equal(store.fileAt(id, 0, 0), null);
});

Deno.test("search finds a file by its text and its name; a deleted conversation's files and index entries go", () => {
  using dir = tempDir();
  const path = join(dir.dir, "h.db");
  using store = new Store(path, { now: clock() });
  const kept = store.saveTurn(null, turn("About seals", "They swim."));
  const id = store.saveTurn(null, { ...turn("Read", "Ok."), files: [NOTES] });
  const byText = store.search("haul out");
  assert.deepEqual(byText.map((h) => [h.id, h.file]), [[
    id,
    "walrus notes.txt",
  ]]);
  assert.deepEqual(byText[0]?.text, "Walruses haul out on ice.");
  assert.deepEqual(byText[0]?.marks, [[9, 17]]);
  assert.deepEqual(store.search("notes").map((h) => h.id), [id]);
  // One result per conversation: its question and its file both match.
  store.saveTurn(kept, { ...turn("Seals again", "Yes."), files: [NOTES] });
  assert.deepEqual(
    store.search("walruses").map((h) => h.id).sort(),
    [kept, id].sort(),
  );
  assert.ok(store.delete(id));
  assert.deepEqual(store.search("haul").map((h) => h.id), [kept]);
  while (store.maintain()) { /* upkeep to the end */ }
  assert.equal(
    rows(path, "SELECT count(*) AS n FROM turn_files")[0]?.n,
    1,
    "only the kept conversation's file",
  );
  assert.deepEqual(store.integrityCheck(), []);
});
