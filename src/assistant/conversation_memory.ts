/**
 * The memories one conversation's requests carry, and the memories the
 * model's `remember` kept during its turn in flight. The block is taken
 * once, at the conversation's first request (a saved conversation's was
 * kept with it at its first save), then kept for its life, so its prefix
 * never changes. The promise itself is kept, so turns that overlap share
 * one block and a stopped one never replaces it.
 */
import { describeError, log } from "../base/log.ts";
import { type MemoryBlock, NO_MEMORIES } from "./memory.ts";

/** Where a conversation takes the memories its requests carry. */
export interface MemorySource {
  block(count: (text: string) => Promise<number>): Promise<MemoryBlock>;
  count(): number;
  readonly on: boolean;
  /** Names the saved turn memories kept while it ran came from. */
  sourced(ids: readonly number[], source: { id: number; turn: number }): void;
}

/** One conversation's memory block and the memories its turn in flight kept. */
export class ConversationMemory {
  readonly #source: MemorySource | undefined;
  #block: Promise<MemoryBlock> | null = null;
  #taken: MemoryBlock | null = null;
  #remembered: number[] = [];

  /** `kept`: the block a saved conversation carries (null: none taken yet). */
  constructor(source: MemorySource | undefined, kept: MemoryBlock | null) {
    this.#source = source;
    if (kept) this.#keep(kept);
  }

  /** The block once taken; null before the first request. */
  get taken(): MemoryBlock | null {
    return this.#taken;
  }

  /** How many memories the requests carry (before the first: how many there are). */
  get count(): number {
    if (this.#taken) return this.#taken.count;
    return this.#source?.on ? this.#source.count() : 0;
  }

  /** The block, taken now if it was not: `count` measures a text in tokens. */
  take(count: (text: string) => Promise<number>): Promise<MemoryBlock> {
    if (this.#block) return this.#block;
    if (!this.#source) return this.#keep(NO_MEMORIES);
    const taking = this.#source.block(count).then((block) => {
      this.#taken = block;
      return block;
    }, (error) => {
      // Nothing was sent with it: the next request takes it again.
      this.#block = null;
      throw error;
    });
    this.#block = taking;
    return taking;
  }

  #keep(block: MemoryBlock): Promise<MemoryBlock> {
    this.#taken = block;
    this.#block = Promise.resolve(block);
    return this.#block;
  }

  /** A turn starts: memories an earlier one kept before it was saved stay without a source. */
  turnStarts(): void {
    this.#remembered = [];
  }

  /** A memory the model's `remember` kept during the turn in flight. */
  remembered(memory: number): void {
    this.#remembered.push(memory);
  }

  /** The turn in flight was saved as `turn` of conversation `id`: it is the source of the memories kept while it ran. */
  saved(id: number, turn: number): void {
    const ids = this.#remembered;
    this.#remembered = [];
    if (ids.length === 0) return;
    try {
      this.#source?.sourced(ids, { id, turn });
    } catch (error) {
      log.warn("memory source not kept", {
        conv: id,
        memories: ids.length,
        error: describeError(error),
      });
    }
  }
}
