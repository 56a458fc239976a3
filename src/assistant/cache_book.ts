/**
 * What is known of each model's prompt cache: whether llama-server can shift
 * it. Where it can, `n_cache_reuse` lets the server keep the cache of the
 * turns a moved window still carries (it bridges the span that left), so the
 * window may slide a turn at a time. Where it cannot (sliding-window
 * attention models such as Gemma 3 and gpt-oss, recurrent and hybrid models,
 * multimodal prompts: llama-server ignores `n_cache_reuse` there), every
 * kept turn is read again whenever the window's first turn changes, so the
 * window moves in blocks instead. The server says which only through the
 * `cache_n` it reports for the first request after a window moved; that is
 * learnt per model, kept in the history file and logged. A finding changes
 * only when two such requests in a row agree: llama-server's host-memory
 * prompt cache may hand a request a saved prompt of another conversation
 * with a longer common start, and one request's `cache_n` then says little.
 */
import { describeError, log } from "../base/log.ts";

/** Where findings are kept between runs: the history file. */
export interface CacheFacts {
  cacheShift(model: string): { shifts: boolean } | null;
  setCacheShift(model: string, shifts: boolean): void;
}

/** Kept-turn tokens below which a request says too little to tell. */
const MIN_KEPT_TOKENS = 64;

/** What a request right after the window moved reported, and what it carried. */
export interface MovedSample {
  /** Tokens of the request's fixed start (system prompt, tool schemas), as estimated. */
  fixed: number;
  /** Tokens of the turns it carried before the newest, which a shifted cache still holds. */
  kept: number;
  /** Prompt tokens the server reused. */
  cacheN: number;
  /** The request's `n_cache_reuse`: the server reuses no run of cached tokens shorter than this. */
  reuse: number;
}

/** Each model's prompt-cache finding. */
export class CacheBook {
  readonly #facts: CacheFacts | null;
  readonly #known = new Map<string, boolean | null>();
  /** Each model's last sample that did not match its finding, waiting for a second one. */
  readonly #heard = new Map<string, boolean>();

  /** A book that reads and keeps findings in `facts` (none: in memory only). */
  constructor(facts: CacheFacts | null = null) {
    this.#facts = facts;
  }

  /** Whether the server shifts this model's cache; null until learnt. */
  shifts(model: string): boolean | null {
    if (!this.#known.has(model)) {
      let shifts: boolean | null = null;
      try {
        shifts = this.#facts?.cacheShift(model)?.shifts ?? null;
      } catch (error) {
        log.warn("model cache finding unreadable", {
          error: describeError(error),
        });
      }
      this.#known.set(model, shifts);
    }
    return this.#known.get(model) ?? null;
  }

  /**
   * Learns from a request right after the window moved. A cache that was
   * shifted holds the kept turns (`cache_n` reaches well into them); one that
   * could not be holds only the fixed start before the first turn that
   * changed. Returns the finding once two samples in a row tell it (or the
   * sample agrees with it); null while that is not so.
   */
  observe(model: string, sample: MovedSample): boolean | null {
    // Kept turns shorter than the shortest run the server reuses are read
    // again by any server: they tell nothing.
    if (sample.kept < Math.max(MIN_KEPT_TOKENS, sample.reuse)) return null;
    const shifts = sample.cacheN >= sample.fixed + sample.kept / 2;
    const before = this.shifts(model);
    if (before === shifts) {
      this.#heard.delete(model);
      return shifts;
    }
    if (this.#heard.get(model) !== shifts) {
      this.#heard.set(model, shifts);
      return null;
    }
    this.#heard.delete(model);
    this.#known.set(model, shifts);
    log.info("model prompt cache learnt", {
      model,
      shifts,
      history: shifts ? "slides" : "moves in blocks",
      cache_n: sample.cacheN,
      fixed: sample.fixed,
      kept: sample.kept,
    });
    try {
      this.#facts?.setCacheShift(model, shifts);
    } catch (error) {
      log.warn("model cache finding not kept", {
        error: describeError(error),
      });
    }
    return shifts;
  }
}
