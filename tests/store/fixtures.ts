/** What the store's tests share: turns to save, a clock, temporary places and a second connection to look with. */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { integrityProblems } from "../../src/store/schema.ts";
import type { Store, StoredTurn } from "../../src/store/store.ts";

/** A turn as the reply loop saves it: the date stamp in its messages only. */
export function turn(
  user: string,
  reply: string,
  tools: string[] = [],
): StoredTurn {
  return {
    user,
    reply,
    tools,
    messages: [
      { role: "user", content: `[2026-01-01 10:00] ${user}` },
      { role: "assistant", content: reply },
    ],
  };
}

/** A clock in ms that moves one minute per reading, from a whole Unix second, so `updated` orders saves. */
export function clock(startSeconds = 1_700_000_000): () => number {
  let t = startSeconds * 1000;
  return () => (t += 60_000);
}

/** A file's permission bits. */
export function mode(path: string): number {
  return (Deno.statSync(path).mode ?? 0) & 0o777;
}

/** A temporary directory, removed with everything in it at the end of its scope. */
export function tempDir(): { dir: string } & Disposable {
  const dir = Deno.makeTempDirSync();
  return {
    dir,
    [Symbol.dispose]: () => Deno.removeSync(dir, { recursive: true }),
  };
}

/** Where a store may live: a real temporary file, and SQLite's in-memory one. */
export const places: {
  name: string;
  path: () => string;
  cleanup: () => void;
}[] = [
  (() => {
    let dir = "";
    return {
      name: "file",
      path: () => {
        dir = Deno.makeTempDirSync();
        return join(dir, "data", "history.db");
      },
      cleanup: () => Deno.removeSync(dir, { recursive: true }),
    };
  })(),
  { name: ":memory:", path: () => ":memory:", cleanup: () => {} },
];

/** Runs the store's upkeep until it reports nothing left, as its timer would. */
export function settle(store: Store): void {
  while (store.maintain());
}

/** Resolves once `done()` holds, polling; rejects after `ms`. */
export async function eventually(
  done: () => boolean,
  what: string,
  ms = 10_000,
): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done()) {
    if (performance.now() > deadline) {
      throw new Error(`Timed out waiting until ${what}.`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Runs `read` on a connection of its own to the file, as a second process would. */
export function peek<T>(path: string, read: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    return read(db);
  } finally {
    db.close();
  }
}

/** The `n` a counting query answers. */
export function count(
  db: DatabaseSync,
  sql: string,
  ...args: number[]
): number {
  return Number(db.prepare(sql).get(...args)?.n);
}

/** Saves one conversation of `turns` walrus turns; returns its id. */
export function walrusConversation(store: Store, turns: number): number {
  const id = store.saveTurn(null, turn("walrus 0", "Blubber 0."));
  for (let i = 1; i < turns; i++) {
    store.saveTurn(id, turn(`walrus ${i}`, `Blubber ${i}.`));
  }
  return id;
}

/** The turns of conversation `conv` still in the file, read on a connection of its own. */
export function turnsLeft(path: string, conv: number): number {
  return peek(
    path,
    (db) => count(db, "SELECT count(*) AS n FROM turns WHERE conv = ?", conv),
  );
}

/** The problems SQLite's and FTS5's checks find, from a connection of its own. */
export function rawIntegrity(db: DatabaseSync): string[] {
  return integrityProblems(db, { fullText: true });
}

/** What schema versions 8 to 11 added (files, memories, vectors, memory blocks): a test that makes an older file drops it first. */
export const SINCE_7 = `ALTER TABLE conversations DROP COLUMN memory_block;
  ALTER TABLE conversations DROP COLUMN memory_count;
  DROP TABLE vectors;
  DROP TABLE memories;
  DROP TABLE refused;
  ALTER TABLE conversations DROP COLUMN memory_read;
  DROP TABLE files_fts;
  DROP TABLE turn_files;`;
