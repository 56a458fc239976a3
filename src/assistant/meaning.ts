/**
 * Search by meaning: the query made a vector by the embeddings endpoint
 * (cut to what it takes at once), and the turns whose vectors are nearest,
 * found off the main thread, one per conversation with its best turn's
 * text. A query's vector is bounded by a few seconds of its own, so a hung
 * embedding server holds up no search and no reply's `search_history`
 * for longer; and while the indexer knows the server is down, a search by
 * both ways need not ask it at all (`available`).
 */
import { AssistantError } from "../base/errors.ts";
import type { Embedder } from "../llm/embeddings.ts";
import type { MeaningHit } from "./fusion.ts";

/** Where the nearest turns are found: the search worker, given a query vector and the name of the model that made the stored ones. */
export type NearestTurns = (
  query: Float32Array,
  model: string,
  limit: number,
  exclude: number | null,
) => Promise<MeaningHit[]>;

/** What a search by meaning needs. */
export interface MeaningOptions {
  embedder: Pick<Embedder, "embed">;
  nearest: NearestTurns;
  /** Ends a query's request at shutdown. */
  signal: AbortSignal;
  /** Whether the embedding server is known to be down (the indexer's last try failed); default never. */
  down?: () => boolean;
  /** Bound of a query's vector, in ms; default 5000. */
  queryMs?: number;
}

/** Bound of a query's vector: a local embedding of a query takes milliseconds. */
const QUERY_MS = 5000;

/** The conversations whose turns mean most like a query. */
export class Meaning {
  readonly #o: MeaningOptions;

  /** A search by meaning over the worker's vectors. */
  constructor(options: MeaningOptions) {
    this.#o = options;
  }

  /** Whether the embedding server may answer: false while it is known to be down. */
  get available(): boolean {
    return !(this.#o.down?.() ?? false);
  }

  /** The best conversations by meaning, best first; `exclude` leaves one conversation out. AssistantError `embed_failed` when the embedding server fails or takes longer than the query's bound. */
  async search(
    q: string,
    limit: number,
    exclude: number | null = null,
  ): Promise<MeaningHit[]> {
    if (q.trim() === "") return [];
    const { embedder, signal } = this.#o;
    const { name, vectors } = await embedder.embed([q], signal, {
      withinMs: this.#o.queryMs ?? QUERY_MS,
    });
    const query = vectors[0];
    if (!query) {
      throw new AssistantError("embedding server: no vector for the query", {
        code: "embed_failed",
      });
    }
    return await this.#o.nearest(query, name, limit, exclude);
  }
}
