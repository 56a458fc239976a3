/**
 * The turns' vectors for search by meaning, as the writer keeps them: which
 * turns still need one for the embedding model in use (scanned down by id
 * in bounded ranges, so no statement reads the whole history at once, or
 * named one by one), the text each is made from, and the vector kept beside
 * its turn. A model is its name and its vectors' dimension: a vector of
 * another dimension is made again even where the server's name for its
 * model stayed the same. A turn whose text the server refused gets a vector
 * of zeros, which no search finds, so the work moves past it.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

/** The turns indexing counts: those of conversations not being deleted. */
export const TOTAL_SQL = `SELECT count(*) AS n FROM turns
  WHERE conv NOT IN (SELECT id FROM deleted_conversations)`;

/** The vectors of model `?` and dimension `?` among the turns TOTAL_SQL counts: a deleted conversation's vectors wait for upkeep, and must not make done pass total. */
export const DONE_SQL = `SELECT count(*) AS n FROM vectors v
  JOIN turns t ON t.id = v.turn
  WHERE v.model = ? AND v.dim = ?
    AND t.conv NOT IN (SELECT id FROM deleted_conversations)`;

/** Ids a backlog step scans at most: one statement stays short at a million turns. */
export const SCAN_SPAN = 4096;

/** The model that makes the vectors: its name and their dimension. */
export interface VectorModel {
  name: string;
  dim: number;
}

/** A turn to embed: its row, and the text its vector is made from. */
export interface TurnText {
  turn: number;
  text: string;
}

/** The statements of the turns' vectors. */
export interface VectorStatements {
  top: StatementSync;
  pending: StatementSync;
  listed: StatementSync;
  put: StatementSync;
  /** A turn's vector, dropped inside the caller's transaction (its turn rewritten). */
  drop: StatementSync;
  total: StatementSync;
  done: StatementSync;
}

/** The question, the reply and the text of the turn's files, as `text` joins them. */
const TURN_TEXT = `t.id AS turn, t.user AS user, t.reply AS reply,
  (SELECT group_concat(f.name || char(10) || f.text, char(10) || char(10))
     FROM turn_files f WHERE f.turn = t.id AND f.text IS NOT NULL) AS files`;

/** A turn that still needs a vector of the model and dimension the two parameters name. */
const needsOne = (model: string, dim: string) =>
  `(v.turn IS NULL OR v.model <> ${model} OR v.dim <> ${dim})
   AND t.conv NOT IN (SELECT id FROM deleted_conversations)`;

/** Prepares the vectors' statements on the store's connection. */
export function prepareVectorStatements(db: DatabaseSync): VectorStatements {
  return {
    top: db.prepare("SELECT max(id) AS top FROM turns"),
    pending: db.prepare(
      `SELECT ${TURN_TEXT} FROM turns t LEFT JOIN vectors v ON v.turn = t.id
       WHERE t.id < CAST(?1 AS INTEGER) AND t.id >= CAST(?2 AS INTEGER)
         AND ${needsOne("?3", "?4")}
       ORDER BY t.id DESC LIMIT ?5`,
    ),
    listed: db.prepare(
      `SELECT ${TURN_TEXT} FROM turns t LEFT JOIN vectors v ON v.turn = t.id
       WHERE t.id IN (SELECT value FROM json_each(?1))
         AND ${needsOne("?2", "?3")}
       ORDER BY t.id DESC`,
    ),
    // Only while its turn is there: a turn deleted meanwhile gets none.
    put: db.prepare(
      `INSERT INTO vectors(turn, model, dim, data)
       SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?1)
       ON CONFLICT(turn) DO UPDATE SET model = excluded.model,
         dim = excluded.dim, data = excluded.data`,
    ),
    drop: db.prepare("DELETE FROM vectors WHERE turn = ?"),
    total: db.prepare(TOTAL_SQL),
    done: db.prepare(DONE_SQL),
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
    model: VectorModel,
    limit: number,
  ): TurnText[] {
    return texts(this.#sql.pending.all(
      below,
      Math.max(floor, below - SCAN_SPAN),
      model.name,
      model.dim,
      limit,
    ));
  }

  /** Those of `turns` that have no vector of `model`, newest first, with their text. */
  pendingOf(turns: readonly number[], model: VectorModel): TurnText[] {
    if (turns.length === 0) return [];
    return texts(
      this.#sql.listed.all(JSON.stringify(turns), model.name, model.dim),
    );
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

  /** Drops a turn's vector inside the caller's transaction: its turn is being rewritten. */
  dropIn(turn: number): void {
    this.#sql.drop.run(turn);
  }

  /** The turns there are (deleted conversations left out), and how many of them have a vector of `model`. */
  progress(model: VectorModel): { done: number; total: number } {
    return {
      done: Number(this.#sql.done.get(model.name, model.dim)?.n ?? 0),
      total: Number(this.#sql.total.get()?.n ?? 0),
    };
  }
}

/** Rows of turns as the texts their vectors are made from. */
function texts(rows: Record<string, unknown>[]): TurnText[] {
  return rows.map((row) => ({
    turn: Number(row.turn),
    text: [row.user, row.reply, row.files].filter((part) =>
      typeof part === "string" && part !== ""
    ).join("\n\n"),
  }));
}
