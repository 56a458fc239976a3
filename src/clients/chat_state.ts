/**
 * What chat knows of the daemon's shared state, folded from its `hello`
 * and the events since: whether a reply runs, the question `/edit` takes
 * up, a call waiting for approval, and what the prompt shows of the
 * current conversation.
 */
import type { Event, State } from "../protocol/events.ts";
import type { HelloEvent } from "./client.ts";

/** A call waiting for approval, and whether this chat answered it. */
export interface WaitingCall {
  call: string;
  answered: boolean;
}

/** The shared state as this chat last heard it. */
export class ChatState {
  /** The daemon's activity. */
  state: State;
  /** The current conversation's last stored question, for `/edit`. */
  lastQuestion: string | null;
  /** The current conversation lives in memory only. */
  private: boolean;
  /** The call waiting for approval, if one does. */
  confirm: WaitingCall | null = null;
  /** The question of the turn streaming now in the conversation shown. */
  #turnQuestion: string | null;

  /** The state a `hello` describes. */
  constructor(hello: HelloEvent) {
    this.state = hello.state;
    this.lastQuestion = hello.turns.at(-1)?.user ?? null;
    this.private = hello.private === true;
    // A reply of another conversation is not this one's last question.
    this.#turnQuestion = hello.pending?.id === hello.id
      ? hello.pending.user
      : null;
    // Approvals are shared: a call waits whichever conversation is shown.
    const waiting = hello.confirm ?? hello.pending?.confirm;
    if (waiting) this.confirm = { call: waiting.call, answered: false };
  }

  /** Follows one event. */
  apply(event: Event): void {
    switch (event.type) {
      case "user":
        this.state = "thinking";
        this.#turnQuestion = event.text;
        break;
      case "done":
        this.confirm = null;
        if (!event.stopped && this.#turnQuestion !== null) {
          this.lastQuestion = this.#turnQuestion;
        }
        break;
      case "state":
        this.state = event.state;
        break;
      case "conversation":
        this.lastQuestion = event.turns.at(-1)?.user ?? null;
        this.private = event.private === true;
        // A reply in flight stays with the conversation it started in.
        this.#turnQuestion = null;
        break;
      case "confirm":
        this.confirm = { call: event.call, answered: false };
        break;
      case "approved":
        if (this.confirm?.call === event.call) this.confirm = null;
        break;
    }
  }

  /** What the prompt says before its `>` of the conversation shown. */
  tags(): string[] {
    return this.private ? ["private"] : [];
  }
}
