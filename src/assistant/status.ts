/**
 * What the daemon tells of itself: its state, the model in use and how full
 * its context is, which go out as `state` and `ctx` events as they change;
 * and the `hello` that sums it all up, the conversation and the reply in
 * flight included, for a client that connects later.
 */
import type { ModelChoice } from "../llm/client.ts";
import type {
  BackendView,
  ConfirmView,
  Event,
  HelloPending,
  PendingView,
  State,
} from "../protocol/protocol.ts";
import type { Conversation } from "./conversation.ts";
import type { TokenLedger } from "./token_ledger.ts";

/** The fields of `hello` that the status fills. */
export interface StatusView {
  state: State;
  tool?: string;
  model: string | null;
  ctx_used: number | null;
  ctx_max: number | null;
  ctx_sent: number | null;
  ctx_total: number | null;
}

/** The state, model and context use, and the events that announce them. */
export class Status {
  readonly #emit: (event: Event) => void;
  #state: State = "idle";
  #tool: string | null = null;
  #model: string | null = null;
  #ctxUsed: number | null = null;
  #ctxMax: number | null = null;
  /** Earlier turns the last request carried, of how many; about the current conversation only. */
  #ctxSent: number | null = null;
  #ctxTotal: number | null = null;

  /** Starts idle with nothing known; events go to `emit`. */
  constructor(emit: (event: Event) => void) {
    this.#emit = emit;
  }

  /** The status for `hello`. */
  view(): StatusView {
    return {
      state: this.#state,
      ...(this.#tool !== null ? { tool: this.#tool } : {}),
      model: this.#model,
      ctx_used: this.#ctxUsed,
      ctx_max: this.#ctxMax,
      ctx_sent: this.#ctxSent,
      ctx_total: this.#ctxTotal,
    };
  }

  /** Sets the state (with the tool it concerns, if any) and announces it. */
  set(state: State, tool: string | null = null): void {
    this.#state = state;
    this.#tool = tool;
    this.#emit(
      tool === null ? { type: "state", state } : { type: "state", state, tool },
    );
  }

  /** A reply chose its model. */
  model(model: ModelChoice, ledger: TokenLedger): void {
    this.#model = model.id;
    // Another model's size would be wrong: unknown is null.
    this.#ctxMax = model.nCtx ?? ledger.contextSize(model.id);
  }

  /** A request used this many tokens of the context. */
  usage(used: number): void {
    this.#ctxUsed = used;
  }

  /** Another conversation is current: what the last request carried was about the one before. */
  forgetSent(): void {
    this.#ctxSent = null;
    this.#ctxTotal = null;
  }

  /**
   * A reply finished: its context size and what it carried (kept when its
   * conversation is the current one), announced as `ctx` once a size is known.
   */
  finished(
    result: { nCtx: number | null; sent: number; total: number },
    current: boolean,
  ): void {
    // A refusal may have told the size /props did not.
    this.#ctxMax = result.nCtx ?? this.#ctxMax;
    if (current) {
      this.#ctxSent = result.sent;
      this.#ctxTotal = result.total;
    }
    if (this.#ctxUsed !== null) {
      this.#emit({
        type: "ctx",
        used: this.#ctxUsed,
        max: this.#ctxMax,
        sent: result.sent,
        total: result.total,
      });
    }
  }
}

/** What a `hello` is made of. */
export interface HelloParts {
  status: StatusView;
  backend: BackendView | undefined;
  current: Conversation;
  /** The reply in flight and the conversation it belongs to. */
  reply: { conversation: Conversation; pending: PendingView } | null;
  /** The call waiting for the user's approval, if any. */
  waiting: ConfirmView | null;
}

/** The `hello` for a client that just connected. */
export function helloEvent(parts: HelloParts): Event {
  const { backend, current, waiting } = parts;
  return {
    type: "hello",
    ...parts.status,
    ...(backend ? { backend } : {}),
    id: current.id,
    turns: current.turns,
    pending: helloPending(parts),
    ...(waiting ? { confirm: waiting } : {}),
    ...(current.private ? { private: true as const } : {}),
  };
}

/**
 * The reply in flight with the conversation it belongs to. One that will
 * create its conversation while another (a `new` one) is current is left
 * out: both ids are null, and a client would show it in the wrong one.
 */
function helloPending(
  { reply, current, waiting }: HelloParts,
): HelloPending | null {
  if (!reply) return null;
  const { conversation, pending } = reply;
  if (conversation.id === null && conversation !== current) return null;
  return {
    id: conversation.id,
    ...pending,
    tools: [...pending.tools],
    ...(waiting ? { confirm: waiting } : {}),
  };
}
