/**
 * Search by words and by meaning as one list: reciprocal rank fusion (each
 * conversation scores the sum of 1 / (60 + its rank) over the lists it is
 * in), each item tagged with how it was found. An item found by its words
 * keeps its snippet and marks; one found by meaning alone shows a snippet
 * of its best turn (`snippetOf`), unmarked.
 */
import type { SearchHit } from "../protocol/protocol.ts";
import type { NearHit } from "../store/search_worker_main.ts";

/** A conversation found by meaning: its best turn's text and how close it came. */
export type MeaningHit = NearHit;

/** Reciprocal rank fusion's constant: how much the first places outweigh the rest. */
const K = 60;

/** Characters of a meaning-only item's snippet. */
export const SNIPPET_CHARS = 160;

/** Both lists as one, best first, at most `limit`. */
export function fuse(
  words: readonly SearchHit[],
  meaning: readonly MeaningHit[],
  limit: number,
): SearchHit[] {
  const items = new Map<number, { hit: SearchHit; score: number }>();
  words.forEach((hit, rank) => {
    items.set(hit.id, {
      hit: { ...hit, by: "words" },
      score: 1 / (K + rank + 1),
    });
  });
  meaning.forEach((found, rank) => {
    const score = 1 / (K + rank + 1);
    const known = items.get(found.id);
    if (known) {
      known.score += score;
      known.hit = { ...known.hit, by: "both" };
      return;
    }
    const text = snippetOf(found.text);
    items.set(found.id, {
      hit: {
        id: found.id,
        title: found.title,
        snippet: text,
        text,
        marks: [],
        by: "meaning",
      },
      score,
    });
  });
  return [...items.values()].sort((a, b) => b.score - a.score)
    .slice(0, limit).map((item) => item.hit);
}

/** A turn's text cut on a word near `SNIPPET_CHARS`, whitespace made single spaces. */
export function snippetOf(text: string): string {
  const flat = text.trim().split(/\s+/).join(" ");
  if (flat.length <= SNIPPET_CHARS) return flat;
  const cut = flat.slice(0, SNIPPET_CHARS);
  const space = cut.lastIndexOf(" ");
  return `${cut.slice(0, space > SNIPPET_CHARS / 2 ? space : SNIPPET_CHARS)}…`;
}
