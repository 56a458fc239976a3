/**
 * A conversation's summary: checked, stored beside the conversation (one
 * row in `summaries`, gone with it) and read back.
 */
import { parseTokens, type StoredSummary } from "./rows.ts";
import type { Statements } from "./statements.ts";

/** Throws TypeError or RangeError, naming the field, for a summary the store must not keep. */
export function checkSummary(summary: StoredSummary): void {
  if (typeof summary?.text !== "string") {
    throw new TypeError(
      "Summary text is not a string; pass the text the model wrote.",
    );
  }
  if (!Number.isSafeInteger(summary.turns) || summary.turns < 1) {
    throw new RangeError(
      `Summary turns ${summary.turns} is not a positive integer; pass how many first turns it covers.`,
    );
  }
  const tokens = summary.tokens;
  if (tokens !== null && (!Number.isSafeInteger(tokens) || tokens < 0)) {
    throw new RangeError(
      `Summary tokens ${tokens} is not a count; pass its size in tokens, or null when unknown.`,
    );
  }
}

/**
 * Stores (or with null removes) the summary, already checked, of a
 * conversation known to exist, in one statement. RangeError when it covers
 * more turns than the conversation has stored.
 */
export function writeSummary(
  sql: Statements,
  conversation: number,
  summary: StoredSummary | null,
): void {
  if (summary === null) {
    sql.dropSummary.run(conversation);
    return;
  }
  const stored = Number(sql.countTurns.get(conversation)?.n ?? 0);
  if (summary.turns > stored) {
    throw new RangeError(
      `Summary covers ${summary.turns} turns of conversation ${conversation}, which has ${stored}; pass at most ${stored}.`,
    );
  }
  sql.setSummary.run(conversation, summary.text, summary.turns, summary.tokens);
}

/** A conversation's summary; null when it has none or is deleted. */
export function readSummary(
  sql: Statements,
  conversation: number,
): StoredSummary | null {
  const row = sql.summaryOf.get(conversation);
  if (row === undefined) return null;
  return {
    text: String(row.text ?? ""),
    turns: Number(row.turns ?? 0),
    tokens: parseTokens(row.tokens),
  };
}
