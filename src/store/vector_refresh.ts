/**
 * How the vector index keeps up with the `vectors` table (docs/search.md):
 * the first reading, at once or a slice at a time; after another
 * connection's commit, the rows above the newest turn read and the deleted
 * conversations; the sweep for rows changed below it; turns written anew.
 * The search worker runs this from its source text, so its body uses only
 * its parameters and globals.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { VectorSlots } from "./vector_slots.ts";

/** The table as the index reads it, over one connection. */
export interface VectorRefresh {
  /** Catches up with the commits since the last look; `force`: a sweep due runs now, however soon. */
  look(force: boolean): void;
  /** With `lazy`, reads more of the table for about `ms`; false once all of it is read. */
  load(ms: number): boolean;
  /** Reads these turns' rows again now: each takes its new vector and conversation, or goes. */
  update(turns: readonly number[]): void;
  /** Whether a conversation was in deleted_conversations at the last look. */
  isBlocked(conv: number): boolean;
  /** These turns' rows as stored now, each with its turn's conversation. */
  exact(turns: readonly number[]): ReturnType<StatementSync["all"]>;
  /** A row was replaced in place by another kind of vector: the next sweep files it. */
  resweep(): void;
  /** Bytes of the deleted conversations' array. */
  bytes(): number;
}

/** Prepares the reading of the table into `slots`; without `lazy`, reads all of it now. */
export function prepareRefresh(
  db: DatabaseSync,
  slots: VectorSlots,
  sweepMs: number,
  lazy: boolean,
): VectorRefresh {
  const CHUNK = 64;
  // Conversation -> 1 while in deleted_conversations.
  let blocked = new Uint8Array(0);
  let blockedCount = 0, watermark = 0, version = -1, sweepCost = 0;
  // A sweep is due (after a change).
  let sweepPending = false, swept = Infinity;
  // The first reading is under way (`lazy`): its first data_version.
  let loading = lazy, loadedFrom = -1;

  const versionOf = db.prepare("PRAGMA data_version");
  const deletedIds = db.prepare(
    "SELECT group_concat(id) AS ids FROM deleted_conversations",
  );
  // A chunk's rows of a group end to end (the aggregates step through them
  // in one order), in hex: young garbage, where blobs left the process 11-30
  // MB larger (docs/search.md); and one crossing per chunk, not per row.
  const chunked = (where: string) =>
    db.prepare(
      `SELECT model, dim, fits, max(turn) AS top, group_concat(turn) AS turns,
         group_concat(conv) AS convs, group_concat(hex(data), '') AS data
       FROM (SELECT v.turn AS turn, v.model AS model, v.dim AS dim,
               v.data AS data, t.conv AS conv,
               typeof(v.data) = 'blob' AND v.dim > 0 AND t.conv IS NOT NULL
                 AND length(v.data) = v.dim + 4 AS fits
             FROM vectors v LEFT JOIN turns t ON t.id = v.turn
             WHERE ${where} ORDER BY v.turn LIMIT ${CHUNK})
       GROUP BY model, dim, fits`,
    );
  const above = chunked("v.turn > CAST(? AS INTEGER)");
  const listed = chunked("v.turn IN (SELECT value FROM json_each(?))");
  // A name of its own: a second index on this connection would replace it.
  const known = `desktop_assistant_vector_known_${Math.random() * 1e9 | 0}`;
  db.function(
    known,
    (turn, model, dim) => slots.see(Number(turn), String(model), Number(dim)),
  );
  const unknown = db.prepare(
    `SELECT group_concat(turn) AS turns FROM vectors
     WHERE NOT ${known}(turn, model, dim)`,
  );
  const exact = db.prepare(
    `SELECT v.turn AS turn, v.model AS model, v.dim AS dim, v.data AS data,
       t.conv AS conv FROM vectors v LEFT JOIN turns t ON t.id = v.turn
     WHERE v.turn IN (SELECT value FROM json_each(?))`,
  );
  const numbers = (list: unknown) =>
    typeof list === "string" && list !== "" ? list.split(",").map(Number) : [];
  const isBlocked = (conv: number) => blockedCount > 0 && blocked[conv] === 1;

  /** Reads a statement's chunks; `above` again from each chunk's top turn until none is left (true) or `until` passed (false). */
  const read = (
    statement: typeof above,
    parameter: number | string,
    until = Infinity,
  ): boolean => {
    for (let rows = statement.all(parameter); rows.length > 0;) {
      let top = 0;
      for (const row of rows) {
        top = Math.max(top, Number(row.top));
        if (Number(row.fits) !== 1) continue;
        const g = slots.groupFor(String(row.model), Number(row.dim));
        slots.ingest(
          g,
          numbers(row.turns),
          numbers(row.convs),
          String(row.data),
        );
      }
      watermark = Math.max(watermark, top);
      if (statement !== above) return true;
      if (performance.now() >= until) return false;
      rows = statement.all(top);
    }
    return true;
  };

  const readBlocked = () => {
    const ids = numbers(deletedIds.get()?.ids);
    blocked = new Uint8Array(ids.reduce((a, b) => Math.max(a, b), 0) + 1);
    for (const id of ids) blocked[id] = 1;
    blockedCount = ids.length;
  };

  const sweep = () => {
    const started = performance.now();
    slots.unsee();
    const found = numbers(unknown.get()?.turns);
    slots.compact(true);
    for (let i = 0; i < found.length; i += CHUNK) {
      read(listed, JSON.stringify(found.slice(i, i + CHUNK)));
    }
    if (slots.stale) slots.compact();
    sweepPending = false;
    swept = performance.now();
    sweepCost = swept - started;
  };

  /** One slice of the first reading (`lazy`), each in a snapshot of its own so the writer's checkpoints go on; false once it is through. */
  const load = (ms: number): boolean => {
    if (!loading) return false;
    const until = performance.now() + ms;
    db.exec("SAVEPOINT desktop_assistant_vectors");
    try {
      const now = Number(versionOf.get()?.data_version);
      if (loadedFrom === -1) loadedFrom = now;
      if (read(above, watermark, until)) {
        loading = false;
        version = now;
        readBlocked();
        // A row changed below the watermark meanwhile is the sweep's.
        sweepPending = now !== loadedFrom;
        swept = performance.now();
      }
    } finally {
      db.exec("RELEASE desktop_assistant_vectors");
    }
    if (slots.stale) slots.compact();
    return loading;
  };

  const look = (force: boolean) => {
    while (load(Infinity));
    if (slots.stale) slots.compact();
    // One snapshot for the version and every read that follows it.
    db.exec("SAVEPOINT desktop_assistant_vectors");
    try {
      const now = Number(versionOf.get()?.data_version);
      if (now !== version) {
        version = now;
        readBlocked();
        read(above, watermark);
        sweepPending = true;
      }
      const gap = sweepMs >= 0 ? sweepMs : 20 * sweepCost;
      if (sweepPending && (force || performance.now() - swept >= gap)) sweep();
    } finally {
      db.exec("RELEASE desktop_assistant_vectors");
    }
    if (slots.stale) slots.compact();
  };

  const update = (turns: readonly number[]) => {
    // Above the watermark: the next look reads them anyway.
    const held = turns.filter((t) => t <= watermark);
    if (held.length === 0) return;
    while (load(Infinity));
    db.exec("SAVEPOINT desktop_assistant_vectors");
    try {
      const rows = new Map<number, Record<string, unknown>>();
      for (const row of exact.all(JSON.stringify(held))) {
        rows.set(Number(row.turn), row);
      }
      const again: number[] = [];
      for (const t of held) {
        const row = rows.get(t);
        const data = row?.data;
        const g = row !== undefined && data instanceof Uint8Array &&
            row.conv !== null && Number(row.dim) > 0 &&
            data.length === Number(row.dim) + 4
          ? slots.find(String(row.model), Number(row.dim))
          : undefined;
        const was = slots.filed(t);
        if (g !== undefined && was === g.id) {
          slots.rewrite(g, t, Number(row!.conv), data as Uint8Array);
          continue;
        }
        if (was !== 0) {
          slots.file(t, 0);
          slots.stale = true;
        }
        if (row !== undefined) again.push(t);
      }
      if (slots.stale) slots.compact();
      for (let i = 0; i < again.length; i += CHUNK) {
        read(listed, JSON.stringify(again.slice(i, i + CHUNK)));
      }
    } finally {
      db.exec("RELEASE desktop_assistant_vectors");
    }
  };

  // The first look reads every row; no sweep is due until something changes.
  if (!loading) {
    look(false);
    sweepPending = false;
    swept = performance.now();
  }
  return {
    look,
    load,
    update,
    isBlocked,
    exact: (turns) => exact.all(JSON.stringify(turns)),
    resweep: () => {
      sweepPending = true;
    },
    bytes: () => blocked.byteLength,
  };
}
