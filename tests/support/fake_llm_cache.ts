/**
 * The fake llama-server's prompt cache, as llama-server keeps it
 * (tools/server/server-context.cpp, server-task.cpp):
 *
 * - Each slot holds the tokens of its last prompt and of the reply it
 *   generated, as generated (the reasoning included, the last sampled token
 *   not: it is never decoded). A request reuses the longest common prefix
 *   with its slot's tokens (`cache_n`) and evaluates the rest (`prompt_n`),
 *   at least one token.
 * - `n_cache_reuse` (per request): after that prefix, a run of at least that
 *   many tokens found later in the cache, continuing the prompt exactly
 *   where it stands, is shifted into place and counts as cached; then the
 *   next run, and so on. A model that cannot shift (sliding-window
 *   attention, recurrent or hybrid memory) ignores it and reuses the plain
 *   common prefix (the real server may fall back further, to a context
 *   checkpoint or a full re-read, when its window has moved past that
 *   prefix: not modelled).
 * - Slot choice: the idle slot whose tokens share the largest fraction of
 *   the new prompt (more than `slot_prompt_similarity`, 0.1), else the least
 *   recently used idle one (on a tie the later slot, as the server's `<=`
 *   picks). With the host-memory cache on (llama-server's default
 *   `--cache-ram`), a slot about to lose more than half of its tokens saves
 *   them there first, and takes from there a saved prompt that suits the
 *   new one better. Its size limit is not modelled: it never fills in tests.
 * - A request that finds every slot busy would wait for one on the real
 *   server; the fake never queues (tests overlap requests on purpose), so it
 *   is served at once from an empty cache of its own, which it leaves
 *   unchanged.
 */

import {
  type GeneratedReply,
  generatedText,
  thinkingPrompt,
  tokenPieces,
} from "./fake_llm_context.ts";
import type { FakeModel } from "./fake_llm_models.ts";

/** A token: the fake tokenizer's piece of text (specials are one piece). */
export type Token = string;

/** What the prompt cache did for one chat request. */
export interface CacheUse {
  /** The model whose slots served it. */
  model: string;
  /** The slot that served it; null when every slot was busy. */
  slot: number | null;
  /** Prompt tokens evaluated, `timings.prompt_n`. */
  promptN: number;
  /** Prompt tokens reused from the cache, `timings.cache_n`. */
  cacheN: number;
  /** Of `cacheN`, the tokens shifted into place by `n_cache_reuse`. */
  shifted: number;
}

/** How one model's server caches prompts. */
export interface PromptCacheOptions {
  /** Parallel slots (`--parallel`). */
  slots: number;
  /** False for a model whose cache cannot shift: `n_cache_reuse` is ignored. */
  shift: boolean;
  /** The host-memory prompt cache (`--cache-ram`, on by default in llama-server). */
  cacheRam: boolean;
}

/** What a request asks of the cache. */
export interface CacheRequest {
  /** `n_cache_reuse`; 0 when absent. */
  nCacheReuse: number;
  /** `cache_prompt` (default true): false evaluates the whole prompt. */
  cachePrompt: boolean;
  /** `id_slot`: that slot, or -1 for the server's choice. */
  idSlot: number;
}

/** A slot taken for one request: what the cache gave, and the hand-back with the reply. */
export interface SlotLease {
  slot: number | null;
  cacheN: number;
  shifted: number;
  /** Gives the slot back holding the prompt and these generated tokens. */
  end(generated: readonly Token[]): void;
}

/** llama-server's `slot_prompt_similarity` default. */
const SIMILARITY = 0.1;

interface Slot {
  id: number;
  tokens: readonly Token[];
  busy: boolean;
  lastUsed: number;
}

/** Length of the common prefix of two token lists. */
export function commonPrefix(a: readonly Token[], b: readonly Token[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * How much of `cache` a new prompt reuses: its common prefix, then (when
 * `minChunk` > 0) the chunks llama-server's `n_cache_reuse` loop shifts.
 */
export function reusedTokens(
  cache: readonly Token[],
  prompt: readonly Token[],
  minChunk: number,
): { cached: number; shifted: number } {
  const prefix = commonPrefix(cache, prompt);
  let cached = prefix;
  if (minChunk > 0) {
    let headC = prefix;
    let headP = prefix;
    while (headC < cache.length && headP < prompt.length) {
      let n = 0;
      while (
        headC + n < cache.length && headP + n < prompt.length &&
        cache[headC + n] === prompt[headP + n]
      ) {
        n++;
      }
      if (n >= minChunk) {
        cached += n;
        headC += n;
        headP += n;
      } else {
        headC += 1;
      }
    }
  }
  return { cached, shifted: cached - prefix };
}

/** One model's slots and host-memory prompt cache. */
export class PromptCache {
  readonly #options: PromptCacheOptions;
  readonly #slots: Slot[];
  /** Prompts saved in host memory, oldest first. */
  #saved: (readonly Token[])[] = [];
  #clock = 0;

  /** Empty slots, as a server that just loaded its model has. */
  constructor(options: PromptCacheOptions) {
    this.#options = options;
    this.#slots = Array.from(
      { length: Math.max(1, options.slots) },
      (_, id) => ({
        id,
        tokens: [],
        busy: false,
        lastUsed: -1,
      }),
    );
  }

  /** Takes a slot for `prompt`; the lease says what was reused and gives the slot back. */
  begin(prompt: readonly Token[], request: CacheRequest): SlotLease {
    const slot = this.#choose(prompt, request.idSlot);
    if (slot === null) {
      return { slot: null, cacheN: 0, shifted: 0, end() {} };
    }
    let { cached, shifted } = request.cachePrompt
      ? reusedTokens(
        slot.tokens,
        prompt,
        this.#options.shift ? request.nCacheReuse : 0,
      )
      : { cached: 0, shifted: 0 };
    // The server evaluates at least one token, for the logits of the next.
    if (cached === prompt.length && cached > 0) {
      cached--;
      shifted = Math.min(shifted, cached);
    }
    slot.busy = true;
    slot.tokens = prompt;
    let ended = false;
    return {
      slot: slot.id,
      cacheN: cached,
      shifted,
      end: (generated) => {
        if (ended) return;
        ended = true;
        slot.tokens = [...prompt, ...generated];
        slot.busy = false;
        slot.lastUsed = this.#clock++;
      },
    };
  }

  /** Empties every slot and the host-memory cache (a restarted server). */
  clear(): void {
    for (const slot of this.#slots) slot.tokens = [];
    this.#saved = [];
  }

  /** llama-server's `get_available_slot`, then its host-memory cache update. */
  #choose(prompt: readonly Token[], idSlot: number): Slot | null {
    let chosen: Slot | null = this.#slots[idSlot] ?? null;
    let update = false;
    let best = 0;
    for (const slot of this.#slots) {
      if (idSlot !== -1 && slot.id !== idSlot) continue;
      if (slot.busy || slot.tokens.length === 0) continue;
      const similarity = commonPrefix(slot.tokens, prompt) / prompt.length;
      if (similarity > best && similarity > SIMILARITY) {
        best = similarity;
        chosen = slot;
      }
    }
    if (chosen !== null) {
      // About to lose more than half of what it holds: worth saving.
      if ((best * prompt.length) / chosen.tokens.length < 0.5) update = true;
    } else {
      let oldest = -1;
      for (const slot of this.#slots) {
        if (slot.busy) continue;
        if (chosen === null || slot.lastUsed <= oldest) {
          oldest = slot.lastUsed;
          chosen = slot;
        }
      }
      update = chosen !== null;
    }
    if (chosen === null || chosen.busy) return null;
    if (update && this.#options.cacheRam) {
      this.#save(chosen.tokens);
      this.#load(chosen, prompt);
    }
    return chosen;
  }

  /** `server_prompt_cache::alloc`: keeps a prompt no saved one already contains, dropping those it contains. */
  #save(tokens: readonly Token[]): void {
    if (tokens.length === 0) return;
    if (this.#saved.some((s) => commonPrefix(s, tokens) === tokens.length)) {
      return;
    }
    this.#saved = this.#saved.filter((s) =>
      commonPrefix(s, tokens) !== s.length
    );
    this.#saved.push(tokens);
  }

  /** `server_prompt_cache::load`: a saved prompt that keeps more of itself and covers more of the new one replaces the slot's. */
  #load(slot: Slot, prompt: readonly Token[]): void {
    const lcp = commonPrefix(slot.tokens, prompt);
    let keepBest = slot.tokens.length > 0 ? lcp / slot.tokens.length : -1;
    let simBest = lcp / prompt.length;
    let found = -1;
    for (const [i, saved] of this.#saved.entries()) {
      const common = commonPrefix(saved, prompt);
      const keep = common / saved.length;
      const sim = common / prompt.length;
      // Never trash a large saved prompt for a small overlap.
      if (keep < 0.25) continue;
      if (keepBest < keep && simBest < sim) {
        keepBest = keep;
        simBest = sim;
        found = i;
      }
    }
    if (found === -1) return;
    slot.tokens = this.#saved[found]!;
    this.#saved.splice(found, 1);
  }
}

/** A chat request's use of the cache: its numbers, and the hand-back once its reply is over. */
export interface ChatCacheUse {
  use: CacheUse;
  /** Gives the slot back with the reply as it was streamed (`finish` its finish reason, if any). */
  end(reply: GeneratedReply, finish: string | null): void;
}

/** Every model's prompt cache, made on its first request, with the fake's defaults. */
export class ModelCaches {
  readonly #defaults: PromptCacheOptions;
  readonly #caches = new Map<string, PromptCache>();

  /** No cache until a model's first request. */
  constructor(defaults: PromptCacheOptions) {
    this.#defaults = defaults;
  }

  /**
   * What a chat request for `model` reuses: its prompt `tokens`, counted as
   * `promptTokens` by a server whose template adds `scale` times more (the
   * cached share scales with it, and a token is still evaluated).
   */
  begin(
    model: FakeModel,
    tokens: readonly Token[],
    body: Record<string, unknown>,
    promptTokens: number,
    scale: number,
  ): ChatCacheUse {
    let cache = this.#caches.get(model.id);
    if (!cache) {
      cache = new PromptCache({
        ...this.#defaults,
        ...(model.slots === undefined ? {} : { slots: model.slots }),
        ...(model.shift === undefined ? {} : { shift: model.shift }),
      });
      this.#caches.set(model.id, cache);
    }
    const reuse = body.n_cache_reuse;
    const lease = cache.begin(tokens, {
      nCacheReuse: typeof reuse === "number"
        ? Math.max(0, Math.floor(reuse))
        : 0,
      cachePrompt: body.cache_prompt !== false,
      idSlot: Number.isSafeInteger(body.id_slot) ? body.id_slot as number : -1,
    });
    const cached = Math.max(
      0,
      Math.min(Math.floor(lease.cacheN * scale), promptTokens - 1),
    );
    const thinking = thinkingPrompt(body);
    return {
      use: {
        model: model.id,
        slot: lease.slot,
        promptN: promptTokens - cached,
        cacheN: cached,
        shifted: Math.min(Math.floor(lease.shifted * scale), cached),
      },
      end(reply, finish) {
        const generated = tokenPieces(generatedText(reply, thinking));
        // The last token sampled is never decoded, so never cached: a
        // "length" cut's last one (a stop's is the end-of-turn token).
        if (finish === "length") generated.pop();
        lease.end(generated);
      },
    };
  }

  /** Empties every model's slots and host-memory cache (a restarted server). */
  clear(): void {
    for (const cache of this.#caches.values()) cache.clear();
  }

  /** Drops the cache of every model that is no longer loaded among `models`. */
  keepLoaded(models: readonly FakeModel[]): void {
    for (const id of this.#caches.keys()) {
      const model = models.find((m) => m.id === id);
      if (!model || (model.status ?? "loaded") !== "loaded") {
        this.#caches.delete(id);
      }
    }
  }
}
