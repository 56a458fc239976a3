/**
 * The context budget of one reply: every request fits the model's context
 * less a reserve for the reply. The history sent is the newest turns that
 * fit; a tool round that would not fit leaves out more history, then cuts
 * the largest of this turn's results; and a request llama-server still
 * refuses for its length is sent again at once with less, at most twice.
 */
import { type ChatMessage, contentText } from "../llm/chat_types.ts";
import type { Config } from "../base/config.ts";
import type { Timings, Truncation } from "../protocol/protocol.ts";
import { log } from "../base/log.ts";
import { type Cover, HistoryWindow } from "./history_window.ts";
import { withSummary } from "./prompt.ts";
import { cuttable } from "./result_cut.ts";
import {
  MESSAGE_OVERHEAD,
  overheadOf,
  shapeOf,
  type Tokenize,
  type TokenLedger,
  utf8Bytes,
} from "./token_ledger.ts";
import { TurnRounds } from "./turn_rounds.ts";
import type { CacheBook } from "./cache_book.ts";
import { replyReserve, truncation } from "./reserve.ts";

/** What a reply's plan is made from. */
export interface PlanOptions {
  ledger: TokenLedger;
  model: string;
  /** The context size, when known. */
  nCtx: number | null;
  config: Pick<Config, "reply_reserve" | "request" | "history_turns">;
  system: ChatMessage & { role: "system" };
  /** The tool schemas sent with every request. */
  schemas: unknown[];
  question: ChatMessage & { role: "user" };
  /** The files in the question and what each costs, as estimated: a question too long names the largest. */
  files?: readonly { name: string; tokens: number }[];
  /** The question as the history keeps it (pictures as references); default `question`. */
  kept?: ChatMessage & { role: "user" };
  /** The conversation's earlier turns, oldest first, with their measured sizes (null: unknown). */
  history: readonly (readonly ChatMessage[])[];
  counts: readonly (number | null)[];
  /** Counts through llama-server; absent where the server cannot. */
  tokenize: Tokenize | undefined;
  /** The reply's signal: counting stops with it. */
  signal: AbortSignal;
  /** Where the conversation's last request started its window, for a window that moves in blocks; null slides. */
  blockFrom?: number | null;
  /** The conversation's running summary and the turn whose question carries it (null: this turn's will). */
  summary?: RidingSummary | null;
  /** What the summary asks of the window; null when nothing summarises. */
  cover?: Cover | null;
  /** Where the first request's `cache_n` teaches whether the server shifts the model's cache; absent: it teaches nothing. */
  cache?: CacheWitness;
}

/**
 * What a request right after the window moved can teach about the model's
 * prompt cache: only when the server's cache held this conversation's last
 * request (`warm`) and the window did move.
 */
export interface CacheWitness {
  book: CacheBook;
  /** The server's cache still holds this conversation's last request: no other request came since. */
  warm: boolean;
  /** The request's `n_cache_reuse`. */
  reuse: number;
  /** Where the conversation's last request started its window; null before one. */
  previous: number | null;
}

/** A summary as a request carries it. */
export interface RidingSummary {
  text: string;
  /** Its size in tokens, when measured. */
  tokens: number | null;
  /** The earlier turn whose question carries it; null, or a turn the window leaves out: this turn's question. */
  carrier: number | null;
}

/** The request of one reply as it grows round by round, and what it costs. */
export class ContextPlan {
  readonly #o: PlanOptions;
  /** Bytes of the system prompt and tool schemas, for the ledger. */
  readonly #fixedBytes: number;
  /**
   * The fixed part's size, taken once: estimates move as the ledger
   * calibrates, and the correction from a reported size holds only for the
   * terms it was measured against.
   */
  readonly #fixedTokens: number;
  readonly #questionCost: number;
  readonly #summaryCost: number;
  readonly #window: HistoryWindow;
  readonly #rounds: TurnRounds;
  #nCtx: number | null;
  /** Tokens the earlier turns could take when the window was chosen. */
  readonly #room: number;
  /** Real prompt size less the estimate, from the last size llama-server reported. */
  #correction = 0;
  /** The first request's reported size and the history it carried: what the ledger learns from. */
  #first: { prompt: number; sentCost: number } | null = null;
  /** Replies reported so far. */
  #reports = 0;
  /** Tokens the last request and its reply took in the context, when reported. */
  #used: number | null = null;
  /** The messages of the last request sent. */
  #sent: ChatMessage[] = [];

  /** A plan, once the ledger knows the model's fixed part (the first time, through `tokenize`). */
  static async create(options: PlanOptions): Promise<ContextPlan> {
    await options.ledger.prime(
      options.model,
      fixedText(options.system, options.schemas),
      options.schemas.length,
      options.tokenize,
      options.signal,
    );
    return new ContextPlan(options);
  }

  /** Chooses the history: the newest turns that fit, at most `history_turns`. */
  constructor(options: PlanOptions) {
    this.#o = options;
    const { ledger, model } = options;
    // A refusal's size is the one that held; /props may say more (a server
    // whose slots share its context).
    const refused = ledger.contextSize(model);
    this.#nCtx = options.nCtx === null
      ? refused
      : Math.min(options.nCtx, refused ?? Infinity);
    this.#fixedBytes = utf8Bytes(fixedText(options.system, options.schemas));
    this.#fixedTokens = ledger.fixed(
      model,
      this.#fixedBytes,
      options.schemas.length,
    );
    const question = shapeOf([options.question]);
    this.#questionCost = ledger.estimate(model, question.bytes) +
      overheadOf(question) - MESSAGE_OVERHEAD;
    const summary = options.summary ?? null;
    this.#summaryCost = summary === null ? 0 : summary.tokens ??
      ledger.estimate(model, utf8Bytes(withSummary("", summary.text)));
    const room = (this.budget ?? Infinity) - this.#fixedTokens -
      this.#questionCost - this.#summaryCost;
    this.#room = room;
    this.#window = new HistoryWindow(
      options,
      room,
      options.config.history_turns,
    );
    this.#rounds = new TurnRounds(options);
  }

  /** Tokens a request may take: the context less the reply's reserve; null while the context size is unknown. */
  get budget(): number | null {
    if (this.#nCtx === null) return null;
    return this.#nCtx - replyReserve(this.#nCtx, this.#o.config);
  }

  /** The context size, as known now. */
  get nCtx(): number | null {
    return this.#nCtx;
  }

  /** Earlier turns the request carries. */
  get sent(): number {
    return this.#window.sent;
  }

  /** The index of the first earlier turn the request carries. */
  get start(): number {
    return this.#window.start;
  }

  /** What the request's start costs: its fixed part, and the turns it carries before the newest (what a cache kept across a moved window still holds). */
  carried(): { fixed: number; kept: number } {
    return { fixed: this.#fixedTokens, kept: this.#window.keptCost };
  }

  /** Earlier turns the conversation has. */
  get total(): number {
    return this.#window.total;
  }

  /** Tokens the earlier turns could take when the window was chosen. */
  get room(): number {
    return this.#room;
  }

  /** The question as the history keeps it, without the summary it may carry: what the turn stores. */
  get question(): ChatMessage & { role: "user" } {
    return this.#o.kept ?? this.#o.question;
  }

  /** Tokens the last request and its reply took in the context; null while none was reported. */
  get used(): number | null {
    return this.#used;
  }

  /** The tool schemas every request carries. */
  get schemas(): unknown[] {
    return this.#o.schemas;
  }

  /** The messages of the last request sent; empty before one. */
  get lastRequest(): readonly ChatMessage[] {
    return this.#sent;
  }

  /** The request to send now: `messages()`, kept as the last request sent. */
  request(): ChatMessage[] {
    this.#sent = this.messages();
    return this.#sent;
  }

  /** The question's largest file and its tokens, as estimated; null without files. */
  get largestFile(): { name: string; tokens: number } | null {
    const files = this.#o.files ?? [];
    return files.reduce((a, b) => b.tokens > a.tokens ? b : a, files[0]!) ??
      null;
  }

  /** Whether this turn's tool results are in the request. */
  get hasResults(): boolean {
    return this.#rounds.results().length > 0;
  }

  /** The request's size as estimated (or as last reported, plus what came since). */
  estimate(): number {
    return this.#fixedTokens + this.#window.cost + this.#questionCost +
      this.#summaryCost + this.#rounds.cost() + this.#correction;
  }

  /**
   * The turn whose question carries the summary: the earlier turn that
   * carried it while the window still holds that turn, else this turn's
   * (`total`); null without a summary.
   */
  get carrier(): number | null {
    const summary = this.#o.summary ?? null;
    if (summary === null) return null;
    const { carrier } = summary;
    return carrier !== null && carrier >= this.#window.start &&
        carrier < this.#window.total
      ? carrier
      : this.#window.total;
  }

  /** The request's messages: system prompt, history sent (the summary in the question that carries it), question, this turn's rounds. */
  messages(): ChatMessage[] {
    const summary = this.#o.summary ?? null;
    const carrier = this.carrier;
    const { question } = this.#o;
    return [
      this.#o.system,
      ...this.#window.messages(
        summary && carrier !== this.#window.total
          ? { turn: carrier!, text: summary.text }
          : null,
      ),
      summary && carrier === this.#window.total
        ? { ...question, content: withSummary(question.content, summary.text) }
        : question,
      ...this.#rounds.messages(),
    ];
  }

  /** Adds a message of this turn (an assistant message, a tool result); measured by `measure`. */
  add(message: ChatMessage): void {
    this.#rounds.add(message);
  }

  /** Counts the messages added since the last call through llama-server; never rejects. */
  measure(): Promise<void> {
    return this.#rounds.measure();
  }

  /** Takes what a request's reply ended with (estimates build on the size it reported from now on); returns why the reply was cut short, if it was. */
  reported(
    finish: string | null,
    usage: { used: number; prompt?: number } | null,
    timings: Timings | null = null,
  ): Truncation | null {
    if (this.#reports++ === 0 && timings) this.#witness(timings.cache_n);
    if (usage) this.#used = usage.used;
    if (usage?.prompt !== undefined) {
      this.#first ??= { prompt: usage.prompt, sentCost: this.#window.cost };
      this.#correction += usage.prompt - this.estimate();
    }
    return truncation(finish, usage, this.#nCtx, this.#o.config);
  }

  /** The first reply after the window moved says whether the server kept the cache of the turns still carried. */
  #witness(cacheN: number): void {
    const cache = this.#o.cache;
    if (
      !cache?.warm || cache.reuse <= 0 || cache.previous === null ||
      this.start <= cache.previous
    ) return;
    cache.book.observe(this.#o.model, {
      ...this.carried(),
      cacheN,
      reuse: cache.reuse,
    });
  }

  /**
   * At the turn's end: its size as the history of later turns (null when it
   * could not be measured), and what the first request teaches the ledger
   * (the fixed part: its reported size less what was measured in it).
   */
  async conclude(turn: readonly ChatMessage[]): Promise<number | null> {
    const { ledger, model, tokenize, signal } = this.#o;
    // Both at once: the question alone, for what the first request's
    // reported size teaches, and the whole turn.
    const [asked, counted] = await Promise.all([
      ledger.count(
        model,
        contentText(this.#o.question.content),
        tokenize,
        signal,
      ),
      ledger.countMessages(model, turn, tokenize, signal),
    ]);
    if (this.#first && asked.measured) {
      ledger.learnFixed(
        model,
        this.#fixedBytes,
        this.#first.prompt - this.#first.sentCost - asked.tokens,
      );
    }
    return counted.measured ? counted.tokens : null;
  }

  /**
   * Before a follow-up request: when it would pass the budget, leaves out
   * more history, oldest first, then cuts the largest of this turn's results.
   */
  fit(): void {
    const budget = this.budget;
    if (budget === null) return;
    const over = this.estimate() - budget;
    if (over <= 0) return;
    const { dropped, cut } = this.#shed(over);
    log.info("request fitted to the context", {
      over,
      left_out: dropped,
      cut,
      sent: this.sent,
      total: this.total,
    });
  }

  /**
   * After llama-server refused a request of `promptTokens` for a context of
   * `nCtx`: leaves out enough older turns (then cuts results) to cover the
   * overshoot and the reserve. False when nothing was left to give.
   */
  relieve(promptTokens: number, nCtx: number): boolean {
    if (this.#nCtx !== nCtx) {
      this.#nCtx = nCtx;
      this.#o.ledger.learnContextSize(this.#o.model, nCtx);
    }
    this.#correction += promptTokens - this.estimate();
    const { dropped, cut } = this.#shed(promptTokens - (this.budget ?? nCtx));
    return dropped > 0 || cut > 0;
  }

  /**
   * Gives `over` tokens: older turns first, then this turn's largest results.
   * When even results cut to nothing would not meet the budget (the system
   * prompt, the tool schemas or the question take it), the results are cut
   * only as far as the request must shrink to fit the context itself with a
   * little room for the reply: a result is never lost for a reserve it
   * cannot buy back.
   */
  #shed(over: number): { dropped: number; cut: number } {
    // A turn's cost errs high by the template taken around it: the estimate
    // keeps that part.
    const { saved: dropped, slack } = this.#window.leaveOut(over);
    this.#correction += slack;
    let rest = over - dropped;
    if (rest <= 0) return { dropped, cut: 0 };
    if (cuttable(this.#rounds.results()) < rest && this.#nCtx !== null) {
      const reserve = replyReserve(this.#nCtx, this.#o.config);
      rest -= reserve - Math.floor(reserve / 4);
    }
    return { dropped, cut: rest > 0 ? this.#rounds.cut(rest) : 0 };
  }
}

/** The text of a request's fixed part: the system prompt and the tool schemas. */
function fixedText(system: { content: string }, schemas: unknown[]): string {
  const text = system.content ?? "";
  return schemas.length === 0 ? text : `${text}\n${JSON.stringify(schemas)}`;
}
