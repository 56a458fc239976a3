/**
 * What chat knows of the daemon's shared state, folded from its `hello`
 * and the events since: whether a reply runs, the question `/edit` takes
 * up, a call waiting for approval, the facts proposed to remember and not
 * yet answered, the current conversation's summary, and what the prompt
 * shows (a private conversation, listening).
 */
import type {
  Event,
  ProposalView,
  State,
  SummaryView,
} from "../protocol/events.ts";
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
  /** The current conversation, null while unsaved (and for a private one). */
  id: number | null;
  /** The current conversation lives in memory only. */
  private: boolean;
  /** Its summary of earlier turns: null when it has none, undefined while unknown (a daemon older than summaries). */
  summary: SummaryView | null | undefined;
  /** The voice client records. */
  listening: boolean;
  /** The call waiting for approval, if one does. */
  confirm: WaitingCall | null = null;
  /** Facts proposed to remember that no client has answered, oldest first. */
  proposals: ProposalView[];
  /** Conversations' titles as lists and renames last gave them, for `/delete`'s question. */
  readonly titles: Map<number, string> = new Map();
  /** The question of the turn streaming now in the conversation shown. */
  #turnQuestion: string | null;

  /** The state a `hello` describes. */
  constructor(hello: HelloEvent) {
    this.state = hello.state;
    this.lastQuestion = hello.turns.at(-1)?.user ?? null;
    this.id = hello.id;
    this.private = hello.private === true;
    // `hello` carries the summary when there is one; a daemon that knows
    // none leaves it out, so only a conversation with no turn surely has none.
    this.summary = hello.summary ??
      (hello.turns.length === 0 ? null : undefined);
    this.listening = hello.listening === true;
    // A reply of another conversation is not this one's last question.
    this.#turnQuestion = hello.pending?.id === hello.id
      ? hello.pending.user
      : null;
    // Approvals are shared: a call waits whichever conversation is shown.
    const waiting = hello.confirm ?? hello.pending?.confirm;
    if (waiting) this.confirm = { call: waiting.call, answered: false };
    this.proposals = [...(hello.proposed ?? [])];
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
          // The first reply of a new conversation saves it.
          if (!this.private) this.id ??= event.id;
        }
        this.#turnQuestion = null;
        break;
      case "state":
        this.state = event.state;
        break;
      case "conversation":
        this.lastQuestion = event.turns.at(-1)?.user ?? null;
        this.id = event.id;
        this.private = event.private === true;
        this.summary = event.turns.length === 0 ? null : event.summary;
        // A reply in flight stays with the conversation it started in.
        this.#turnQuestion = null;
        break;
      case "confirm":
        this.confirm = { call: event.call, answered: false };
        break;
      case "approved":
        if (this.confirm?.call === event.call) this.confirm = null;
        break;
      case "summary":
        if (this.isCurrent(event.id)) {
          this.summary = { text: event.text, turns: event.turns };
        }
        break;
      case "listening":
        this.listening = event.on;
        break;
      case "conversations":
        for (const item of event.items) this.titles.set(item.id, item.title);
        break;
      case "renamed":
        this.titles.set(event.id, event.title);
        break;
      case "proposed":
        for (const item of event.items) {
          if (!this.proposals.some((p) => p.proposal === item.proposal)) {
            this.proposals.push(item);
          }
        }
        break;
      case "decided":
        this.dropProposal(event.proposal);
        break;
    }
  }

  /** Forgets a proposal: answered, here or elsewhere. */
  dropProposal(proposal: string): void {
    this.proposals = this.proposals.filter((p) => p.proposal !== proposal);
  }

  /** Whether an event's conversation id names the one shown (null: the private one). */
  isCurrent(id: number | null): boolean {
    return id === null ? this.private : id === this.id;
  }

  /** What the prompt says before its `>` of the conversation shown. */
  tags(): string[] {
    return [
      ...(this.private ? ["private"] : []),
      ...(this.listening ? ["listening"] : []),
    ];
  }
}

/** The summary a conversation's JSON export carries; null when it has none (or the daemon exports none). */
export function exportedSummary(text: string): SummaryView | null {
  let summary: unknown;
  try {
    summary = (JSON.parse(text) as { summary?: unknown } | null)?.summary;
  } catch {
    return null;
  }
  if (typeof summary !== "object" || summary === null) return null;
  const { text: said, turns } = summary as Record<string, unknown>;
  return typeof said === "string" && Number.isSafeInteger(turns)
    ? { text: said, turns: turns as number }
    : null;
}
