/**
 * Each conversation's idle spell before it is read for facts to remember:
 * one timer per conversation, started anew when a turn ends and stopped by
 * a question, so only a conversation left quiet for a while is read.
 */
import { type PollTimer, REAL_TIMER } from "../llm/backend.ts";
import type { Conversation } from "./conversation.ts";

/** A timer the proposer waits with (injected in tests): the backend poller's kind. */
export type IdleTimer = PollTimer;

/** The conversations in an idle spell, each with its timer. */
export class IdleSpells implements Disposable {
  readonly #timer: IdleTimer;
  readonly #timers = new Map<Conversation, unknown>();

  /** No spell running; `timer` absent: the runtime's own. */
  constructor(timer: IdleTimer | undefined) {
    this.#timer = timer ?? REAL_TIMER;
  }

  /** Starts the conversation's spell anew: `ended` runs once it has lasted `ms`. */
  start(conversation: Conversation, ms: number, ended: () => void): void {
    this.stop(conversation);
    this.#timers.set(
      conversation,
      this.#timer.set(() => {
        this.#timers.delete(conversation);
        ended();
      }, ms),
    );
  }

  /** Ends the conversation's spell; false when it was in none. */
  stop(conversation: Conversation): boolean {
    if (!this.#timers.has(conversation)) return false;
    this.#timer.cancel(this.#timers.get(conversation));
    this.#timers.delete(conversation);
    return true;
  }

  /** Ends the spell of conversation `id`. */
  stopId(id: number): void {
    for (const conversation of [...this.#timers.keys()]) {
      if (conversation.id === id) this.stop(conversation);
    }
  }

  /** Ends every spell. */
  [Symbol.dispose](): void {
    for (const conversation of [...this.#timers.keys()]) {
      this.stop(conversation);
    }
  }
}
