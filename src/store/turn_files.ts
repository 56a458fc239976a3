/**
 * The files sent with a question, kept with their turn (`turn_files`, gone
 * with it): written in the turn's transaction, read back in order without
 * a picture's bytes, which are read one at a time when asked for.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { FileKind } from "../protocol/protocol.ts";
import type { StoredFile } from "./rows.ts";

/** The statements of the turns' files. */
export interface FileStatements {
  insert: StatementSync;
  dropOf: StatementSync;
  ofConversation: StatementSync;
  ofTurns: StatementSync;
  data: StatementSync;
  at: StatementSync;
}

/** Prepares the files' statements on the store's connection. */
export function prepareFileStatements(db: DatabaseSync): FileStatements {
  return {
    insert: db.prepare(
      `INSERT INTO turn_files(turn, idx, name, mime, bytes, kind, text, data)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    dropOf: db.prepare("DELETE FROM turn_files WHERE turn = ?"),
    ofConversation: db.prepare(
      `SELECT f.turn, f.name, f.mime, f.bytes, f.kind, f.text
       FROM turns t JOIN turn_files f ON f.turn = t.id
       WHERE t.conv = ? ORDER BY f.turn, f.idx`,
    ),
    ofTurns: db.prepare(
      `SELECT turn, name, mime, bytes, kind, text FROM turn_files
       WHERE turn IN (SELECT value FROM json_each(?)) ORDER BY turn, idx`,
    ),
    data: db.prepare(
      "SELECT data FROM turn_files WHERE turn = ? AND idx = ?",
    ),
    // The index-th file of the turn-th turn (both 0-based) of a live conversation.
    at: db.prepare(
      `SELECT f.name, f.mime, f.kind, f.data, f.text FROM turn_files f
       WHERE f.idx = ?3 AND f.turn = (
         SELECT id FROM turns WHERE conv = ?1
           AND conv NOT IN (SELECT id FROM deleted_conversations)
         ORDER BY seq, id LIMIT 1 OFFSET ?2)`,
    ),
  };
}

/** Writes a turn's files (inside the caller's transaction), replacing any it had. */
export function writeFiles(
  sql: FileStatements,
  turn: number,
  files: readonly StoredFile[],
): void {
  sql.dropOf.run(turn);
  for (const [idx, file] of files.entries()) {
    sql.insert.run(
      turn,
      idx,
      file.name,
      file.mime,
      file.bytes,
      file.kind,
      file.text,
      file.data,
    );
  }
}

/** Each turn's files by turn row, in order, pictures without their bytes. */
export function readFiles(rows: Iterable<Record<string, unknown>>): Map<
  number,
  StoredFile[]
> {
  const files = new Map<number, StoredFile[]>();
  for (const row of rows) {
    const turn = Number(row.turn);
    let list = files.get(turn);
    if (!list) files.set(turn, list = []);
    list.push({
      name: String(row.name ?? ""),
      mime: String(row.mime ?? ""),
      bytes: Number(row.bytes ?? 0),
      kind: kindOf(row.kind),
      text: typeof row.text === "string" ? row.text : null,
      data: null,
    });
  }
  return files;
}

/** A stored picture's bytes; null when there is none. */
export function fileData(
  sql: FileStatements,
  turn: number,
  index: number,
): Uint8Array | null {
  const data = sql.data.get(turn, index)?.data;
  return data instanceof Uint8Array ? data : null;
}

const encoder = new TextEncoder();

/** A stored file with its bytes, by its place (see `Store.fileAt`); null when there is none. */
export function fileAt(
  sql: FileStatements,
  conversation: number,
  turn: number,
  index: number,
): { name: string; mime: string; data: Uint8Array } | null {
  const row = sql.at.get(conversation, turn, index);
  if (!row) return null;
  const data = row.data instanceof Uint8Array
    ? row.data
    : encoder.encode(String(row.text ?? ""));
  const mime = row.kind === "converted"
    ? "text/plain; charset=utf-8"
    : String(row.mime);
  return { name: String(row.name), mime, data };
}

function kindOf(value: unknown): FileKind {
  return value === "image" || value === "converted" ? value : "text";
}
