/**
 * A finished turn written to the history file, for its conversation's
 * commit: a new turn, or the last one replaced by a retry or an edit. A
 * save that fails fails the turn; the row its size is kept on, read after
 * the save, costs only that size when it cannot be read.
 */
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import type { Store } from "../store/store.ts";
import type { FinishedTurn } from "./held_turn.ts";
import { type MemoryBlock, NO_MEMORIES } from "./memory.ts";

/** Saves `turn` in conversation `id` (null: a new one, whose first save keeps `memory`); its id, and its new title when replacing its first turn changed it. AssistantError when it could not be saved. */
export function saveTurn(
  store: Pick<Store, "saveTurn" | "replaceLastTurn">,
  id: number | null,
  turn: FinishedTurn,
  memory: MemoryBlock | null,
): { id: number; title: string | null } {
  const stored = { ...turn, tokens: null };
  try {
    if (turn.replaces && id !== null) {
      return { id, title: store.replaceLastTurn(id, stored) };
    }
    const saved = store.saveTurn(id, stored, {
      memory: memory ?? NO_MEMORIES,
    });
    return { id: saved, title: null };
  } catch (error) {
    if (error instanceof AssistantError) throw error;
    throw new AssistantError("could not save the reply", {
      cause: error,
      code: "save_failed",
    });
  }
}

/** The row of conversation `id`'s last turn, where its size is kept; null when it cannot be read. */
export function lastRow(
  store: Pick<Store, "lastTurnId">,
  id: number,
): number | null {
  // Saved already: a fault here costs only the count's row.
  try {
    return store.lastTurnId(id);
  } catch (error) {
    log.warn("saved turn not found for its count", {
      conv: id,
      error: describeError(error),
    });
    return null;
  }
}
