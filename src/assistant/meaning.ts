/**
 * Search by meaning: the query made a vector by the embeddings endpoint
 * (cut to its context), and the turns whose vectors are nearest, found
 * off the main thread, one per conversation with its best turn's text.
 */
import { AssistantError } from "../base/errors.ts";
import type { Embedder } from "../llm/embeddings.ts";
import type { MeaningHit } from "./fusion.ts";

/** Where the nearest turns are found: the search worker, given a query vector and the model that made the stored ones. */
export type NearestTurns = (
  query: Float32Array,
  model: string,
  limit: number,
  exclude: number | null,
) => Promise<MeaningHit[]>;

/** What a search by meaning needs. */
export interface MeaningOptions {
  embedder: Embedder;
  nearest: NearestTurns;
  /** Ends a query's request at shutdown. */
  signal: AbortSignal;
}

/** The conversations whose turns mean most like a query. */
export class Meaning {
  readonly #o: MeaningOptions;

  /** A search by meaning over the worker's vectors. */
  constructor(options: MeaningOptions) {
    this.#o = options;
  }

  /** The best conversations by meaning, best first; `exclude` leaves one conversation out. AssistantError `embed_failed` when the embedding server fails. */
  async search(
    q: string,
    limit: number,
    exclude: number | null = null,
  ): Promise<MeaningHit[]> {
    if (q.trim() === "") return [];
    const { embedder, signal } = this.#o;
    const chars = await embedder.inputChars(signal);
    const { model, vectors } = await embedder.embed(
      [q.slice(0, chars)],
      signal,
    );
    const query = vectors[0];
    if (!query) {
      throw new AssistantError("embedding server: no vector for the query", {
        code: "embed_failed",
      });
    }
    return await this.#o.nearest(query, model, limit, exclude);
  }
}
