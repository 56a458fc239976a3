/** A conversation's default title, made from its first question. */
import { MAX_TITLE_CHARS } from "../protocol/protocol.ts";

/** Words of the first question that make a conversation's title. */
const TITLE_WORDS = 6;

/**
 * A conversation's title: the first six words of its first question (split
 * on whitespace, joined by single spaces), cut to at most 200 characters
 * counted as `rename` counts them (code points: a surrogate pair is never
 * split), so one huge word cannot make a huge title.
 */
export function titleOf(user: string): string {
  const words: string[] = [];
  // Only the words needed: a pasted book is not split whole.
  for (const match of user.matchAll(/\S+/g)) {
    if (words.push(match[0]) === TITLE_WORDS) break;
  }
  const title = words.join(" ");
  // UTF-16 units never undercount code points.
  if (title.length <= MAX_TITLE_CHARS) return title;
  let end = 0;
  for (
    let points = 0;
    points < MAX_TITLE_CHARS && end < title.length;
    points++
  ) {
    end += (title.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  }
  return title.slice(0, end).trimEnd();
}
