/**
 * Cutting this turn's tool results when they do not fit the context: the
 * largest are cut first, down to a common size, each with a note the model
 * reads, so no result is lost without the model knowing.
 */

/** Tokens a cut's note takes, taken high. */
export const NOTE_TOKENS = 48;

/** One tool result of this turn, as the model is sent it. */
export interface Result {
  /** The whole result. */
  readonly full: string;
  /** Its tokens, whole. */
  readonly tokens: number;
  /** Tokens of it kept now (`tokens` until it is cut). */
  kept: number;
}

/** Tokens a result takes at `kept` tokens, its note included. */
export function resultTokens(result: Result): number {
  return result.kept + (result.kept < result.tokens ? NOTE_TOKENS : 0);
}

/** How much cutting every result above `cap` down to it saves. */
function saving(results: readonly Result[], cap: number): number {
  let saved = 0;
  for (const result of results) {
    if (result.kept <= cap) continue;
    const after = cap + (cap < result.tokens ? NOTE_TOKENS : 0);
    saved += Math.max(0, resultTokens(result) - after);
  }
  return saved;
}

/** The most cutting can save: every result cut to nothing. */
export function cuttable(results: readonly Result[]): number {
  return saving(results, 0);
}

/**
 * Cuts the largest results down to one common size, the largest size that
 * saves `over` tokens (or to nothing when even that does not). Returns the
 * tokens saved; 0 when nothing was left to cut.
 */
export function cutLargest(results: readonly Result[], over: number): number {
  let top = 0;
  for (const result of results) top = Math.max(top, result.kept);
  if (top === 0 || over <= 0) return 0;
  // The saving only grows as the cap falls: the largest cap that saves enough.
  let low = 0;
  let high = top;
  if (saving(results, 0) >= over) {
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (saving(results, mid) >= over) low = mid;
      else high = mid - 1;
    }
  }
  const saved = saving(results, low);
  for (const result of results) {
    const after = low + (low < result.tokens ? NOTE_TOKENS : 0);
    if (result.kept > low && resultTokens(result) > after) result.kept = low;
  }
  return saved;
}

/** The text the model reads for a result: whole, or its start and a note saying it was cut. */
export function resultText(result: Result): string {
  if (result.kept >= result.tokens) return result.full;
  // Tokens are spread about evenly over a tool's output; cut by proportion.
  let end = Math.floor(result.full.length * (result.kept / result.tokens));
  const code = result.full.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  const head = result.full.slice(0, end);
  const note = result.kept === 0
    ? `[This tool result was left out: it was about ${result.tokens} tokens, more than the model's context had room for.]`
    : `[The rest of this tool result was cut: it was about ${result.tokens} tokens, more than the model's context had room for, and only its first ${result.kept} are shown above.]`;
  return head === "" ? note : `${head}\n\n${note}`;
}
