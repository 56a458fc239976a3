/**
 * The registry: one object per saved conversation. Opening a conversation
 * that something still holds (the current one, a reply in flight, a count or
 * a summary request on its way) gives that same object, so every write lands
 * in the one place and no copy goes stale; the few conversations used last
 * are kept too, so switching back to one keeps its history window and its
 * summary's place (and the server's cache of it). Deleting goes through here,
 * so an object never outlives its conversation unnoticed.
 */
import { AssistantError } from "../base/errors.ts";
import type { Store } from "../store/store.ts";
import type { CacheBook } from "./cache_book.ts";
import {
  Conversation,
  type ConversationDeps,
  type MemorySource,
} from "./conversation.ts";
import type { TokenLedger } from "./token_ledger.ts";
import type { TurnConfig } from "./turn_config.ts";

/** Conversations kept after their last use, beside those still held elsewhere. */
const KEPT = 8;

/** What the registry's conversations share. */
export interface ConversationsOptions {
  store: Store;
  ledger: TokenLedger;
  book: CacheBook;
  config: TurnConfig;
  /** The memories a conversation's requests carry; absent: none. */
  memories?: MemorySource;
}

/** Every conversation in memory, one object per id. */
export class Conversations {
  readonly #store: Store;
  readonly #deps: ConversationDeps;
  readonly #live = new Map<number, WeakRef<Conversation>>();
  /** The last used, newest last: held here so they keep what this run learnt of them. */
  readonly #kept: Conversation[] = [];
  readonly #collected = new FinalizationRegistry<number>((id) => {
    if (this.#live.get(id)?.deref() === undefined) this.#live.delete(id);
  });

  /** An empty registry. */
  constructor(options: ConversationsOptions) {
    this.#store = options.store;
    this.#deps = { ...options, saved: (saved) => this.#adopt(saved) };
  }

  /** A new, empty conversation, not saved until its first turn is. */
  create(isPrivate = false): Conversation {
    return new Conversation(this.#deps, null, isPrivate);
  }

  /** The saved conversation `id`: the object in memory when there is one, else read from the history. */
  open(id: number): Conversation {
    const live = this.#live.get(id)?.deref();
    if (live) {
      this.#use(live);
      return live;
    }
    const opened = this.#store.open(id);
    if (!opened) {
      throw new AssistantError("no such conversation", {
        code: "no_such_conversation",
      });
    }
    const conversation = new Conversation(this.#deps, opened);
    this.#adopt(conversation);
    return conversation;
  }

  /** Deletes conversation `id` from the history; returns the object in memory, discarded, if there was one. AssistantError when there is no such conversation. */
  delete(id: number): Conversation | null {
    if (!this.#store.delete(id)) {
      throw new AssistantError("no such conversation", {
        code: "no_such_conversation",
      });
    }
    const live = this.#live.get(id)?.deref();
    this.#live.delete(id);
    if (!live) return null;
    live.discard();
    const at = this.#kept.indexOf(live);
    if (at !== -1) this.#kept.splice(at, 1);
    return live;
  }

  #adopt(conversation: Conversation): void {
    const id = conversation.id!;
    this.#live.set(id, new WeakRef(conversation));
    this.#collected.register(conversation, id);
    this.#use(conversation);
  }

  #use(conversation: Conversation): void {
    const at = this.#kept.indexOf(conversation);
    if (at !== -1) this.#kept.splice(at, 1);
    this.#kept.push(conversation);
    if (this.#kept.length > KEPT) this.#kept.shift();
  }
}
