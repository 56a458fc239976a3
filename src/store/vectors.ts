/**
 * The turns' vectors for search by meaning, as the writer keeps them: which
 * turns still need one for the embedding model in use (scanned down by id
 * in bounded ranges, so no statement reads the whole history at once), the
 * text each is made from, and the vector kept beside its turn.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

/** Ids a backlog step scans at most: one statement stays short at a million turns. */
export const SCAN_SPAN = 4096;

/** A turn to embed: its row, and the text its vector is made from. */
export interface TurnText {
  turn: number;
  text: string;
}

/** The statements of the turns' vectors. */
export interface VectorStatements {
  top: StatementSync;
  pending: StatementSync;
  put: StatementSync;
  total: StatementSync;
  done: StatementSync;
}

/** Prepares the vectors' statements on the store's connection. */
export function prepareVectorStatements(db: DatabaseSync): VectorStatements {
  return {
    top: db.prepare("SELECT max(id) AS top FROM turns"),
    // The question, the reply and the text of the turn's files.
    pending: db.prepare(
      `SELECT t.id AS turn, t.user AS user, t.reply AS reply,
         (SELECT group_concat(f.name || char(10) || f.text, char(10) || char(10))
            FROM turn_files f WHERE f.turn = t.id AND f.text IS NOT NULL)
           AS files
       FROM turns t LEFT JOIN vectors v ON v.turn = t.id
       WHERE t.id < CAST(?1 AS INTEGER) AND t.id >= CAST(?2 AS INTEGER)
         AND (v.turn IS NULL OR v.model <> ?3)
         AND t.conv NOT IN (SELECT id FROM deleted_conversations)
       ORDER BY t.id DESC LIMIT ?4`,
    ),
    // Only while its turn is there: a turn deleted meanwhile gets none.
    put: db.prepare(
      `INSERT INTO vectors(turn, model, dim, data)
       SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?1)
       ON CONFLICT(turn) DO UPDATE SET model = excluded.model,
         dim = excluded.dim, data = excluded.data`,
    ),
    total: db.prepare(
      `SELECT count(*) AS n FROM turns
       WHERE conv NOT IN (SELECT id FROM deleted_conversations)`,
    ),
    done: db.prepare("SELECT count(*) AS n FROM vectors WHERE model = ?"),
  };
}

/** The vectors of one history file, through the store's connection. */
export class Vectors {
  readonly #sql: VectorStatements;
  readonly #write: <T>(work: () => T) => T;

  /** Vectors over prepared statements; `write` runs work in one transaction and books it for upkeep. */
  constructor(
    sql: VectorStatements,
    options: { write: <T>(work: () => T) => T },
  ) {
    this.#sql = sql;
    this.#write = options.write;
  }

  /** The highest turn id there is, plus one: where a backlog starts; 1 for none. */
  top(): number {
    return Number(this.#sql.top.get()?.top ?? 0) + 1;
  }

  /**
   * Up to `limit` turns with ids from `floor` (and at least
   * `below - SCAN_SPAN`) to below `below` that have no vector of `model`,
   * newest first, with their text.
   */
  pending(
    below: number,
    floor: number,
    model: string,
    limit: number,
  ): TurnText[] {
    const rows = this.#sql.pending.all(
      below,
      Math.max(floor, below - SCAN_SPAN),
      model,
      limit,
    );
    return rows.map((row) => ({
      turn: Number(row.turn),
      text: [row.user, row.reply, row.files].filter((part) =>
        typeof part === "string" && part !== ""
      ).join("\n\n"),
    }));
  }

  /**
   * Keeps a batch of vectors (encoded) in one transaction, so a batch costs
   * one sync of the file; returns how many were kept (a turn deleted
   * meanwhile gets none).
   */
  putAll(
    model: string,
    batch: readonly { turn: number; dim: number; data: Uint8Array }[],
  ): number {
    return this.#write(() => {
      let kept = 0;
      for (const { turn, dim, data } of batch) {
        kept += Number(this.#sql.put.run(turn, model, dim, data).changes);
      }
      return kept;
    });
  }

  /** The turns there are, and how many have a vector of `model`. */
  progress(model: string): { done: number; total: number } {
    return {
      done: Number(this.#sql.done.get(model)?.n ?? 0),
      total: Number(this.#sql.total.get()?.n ?? 0),
    };
  }
}
