/**
 * What the assistant remembers of the user, kept in the history file: the
 * memories (newest `updated` first), the facts the user refused (so none is
 * proposed twice), how many turns of each conversation were read for facts
 * to propose, and the block of memories each conversation's requests carry.
 * A memory's text is personal data: nothing here logs it.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { MemoryView } from "../protocol/protocol.ts";

/** One memory as stored, as clients are shown it; `source` is the conversation and turn (0-based) it came from, null when none or gone. */
export type StoredMemory = MemoryView;

/** The memories a conversation's requests carry, as kept with it: the text its system message ends with ("" for none) and how many memories that holds. */
export interface StoredMemoryBlock {
  text: string;
  count: number;
}

/** A text folded for comparing facts: case and spacing aside. */
export function folded(text: string): string {
  return text.trim().split(/\s+/).join(" ").toLowerCase();
}

/** The memories' statements on the store's connection. */
export interface MemoryStatements {
  list: StatementSync;
  count: StatementSync;
  insert: StatementSync;
  rewrite: StatementSync;
  forget: StatementSync;
  refuse: StatementSync;
  refused: StatementSync;
  read: StatementSync;
  setRead: StatementSync;
  setSource: StatementSync;
  block: StatementSync;
}

/** Prepares the memories' statements. */
export function prepareMemoryStatements(db: DatabaseSync): MemoryStatements {
  // A source in a deleted conversation is gone for every read.
  return {
    list: db.prepare(
      `SELECT id, text, created, updated,
         CASE WHEN conv IN (SELECT id FROM deleted_conversations)
           THEN NULL ELSE conv END AS conv, turn
       FROM memories ORDER BY updated DESC, id DESC`,
    ),
    count: db.prepare("SELECT count(*) AS n FROM memories"),
    insert: db.prepare(
      `INSERT INTO memories(text, created, updated, conv, turn)
       VALUES (?, ?, ?, ?, ?)`,
    ),
    rewrite: db.prepare(
      "UPDATE memories SET text = ?, updated = ? WHERE id = ?",
    ),
    forget: db.prepare("DELETE FROM memories WHERE id = ?"),
    refuse: db.prepare(
      `INSERT INTO refused(folded, text, at) VALUES (?, ?, ?)
       ON CONFLICT(folded) DO UPDATE SET at = excluded.at`,
    ),
    refused: db.prepare("SELECT folded FROM refused"),
    read: db.prepare("SELECT memory_read AS n FROM conversations WHERE id = ?"),
    setRead: db.prepare(
      "UPDATE conversations SET memory_read = ? WHERE id = ?",
    ),
    setSource: db.prepare(
      "UPDATE memories SET conv = ?, turn = ? WHERE id = ?",
    ),
    block: db.prepare(
      `SELECT memory_block AS text, memory_count AS n FROM conversations
       WHERE id = ?`,
    ),
  };
}

/** A memory row as the store gives it. */
export function memoryOf(row: Record<string, unknown>): StoredMemory {
  const conv = row.conv;
  return {
    id: Number(row.id),
    text: String(row.text ?? ""),
    created: Number(row.created ?? 0),
    updated: Number(row.updated ?? 0),
    source: conv === null || conv === undefined
      ? null
      : { id: Number(conv), turn: Number(row.turn ?? 0) },
  };
}

/** The memories of one history file, through the store's connection. */
export class Memories {
  readonly #sql: MemoryStatements;
  readonly #now: () => number;
  readonly #write: <T>(work: () => T) => T;

  /** Memories over prepared statements; `write` runs a change in one transaction and books it for upkeep. */
  constructor(
    sql: MemoryStatements,
    options: { now: () => number; write: <T>(work: () => T) => T },
  ) {
    this.#sql = sql;
    this.#now = options.now;
    this.#write = options.write;
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  /** Every memory, newest `updated` first. */
  list(): StoredMemory[] {
    return this.#sql.list.all().map(memoryOf);
  }

  /** How many there are. */
  count(): number {
    return Number(this.#sql.count.get()?.n ?? 0);
  }

  /** Keeps a new memory; returns its id. */
  add(text: string, source: StoredMemory["source"] = null): number {
    const now = this.#seconds();
    const result = this.#write(() =>
      this.#sql.insert.run(
        text,
        now,
        now,
        source?.id ?? null,
        source?.turn ?? null,
      )
    );
    return Number(result.lastInsertRowid);
  }

  /** Rewrites a memory, which becomes the newest; false when there is no such memory. */
  rewrite(id: number, text: string): boolean {
    const now = this.#seconds();
    return this.#write(() =>
      Number(this.#sql.rewrite.run(text, now, id).changes) > 0
    );
  }

  /** Deletes a memory; false when there is no such memory. */
  forget(id: number): boolean {
    return this.#write(() => Number(this.#sql.forget.run(id).changes) > 0);
  }

  /** Records a fact the user refused, so it is never proposed again. */
  refuse(text: string): void {
    this.#write(() =>
      this.#sql.refuse.run(folded(text), text, this.#seconds())
    );
  }

  /** The refused facts, folded. */
  refused(): Set<string> {
    return new Set(this.#sql.refused.all().map((row) => String(row.folded)));
  }

  /** How many of a conversation's first turns were read for facts to propose. */
  read(conversation: number): number {
    return Number(this.#sql.read.get(conversation)?.n ?? 0);
  }

  /** Records how many of a conversation's first turns were read for facts. */
  setRead(conversation: number, turns: number): void {
    this.#write(() => this.#sql.setRead.run(turns, conversation));
  }

  /** Names where a memory came from, its `updated` unchanged; false when there is no such memory. */
  setSource(id: number, source: NonNullable<StoredMemory["source"]>): boolean {
    return this.#write(() =>
      Number(this.#sql.setSource.run(source.id, source.turn, id).changes) > 0
    );
  }

  /** The block a conversation's requests carry, as kept at its first save; null when none was kept (saved before blocks were, or no such conversation). */
  block(conversation: number): StoredMemoryBlock | null {
    const row = this.#sql.block.get(conversation);
    if (row === undefined || row.text === null) return null;
    return { text: String(row.text), count: Number(row.n ?? 0) };
  }
}
