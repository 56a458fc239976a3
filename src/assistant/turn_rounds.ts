/**
 * This turn's messages as its tool rounds add them: measured through
 * llama-server after each round, and the largest tool results cut when a
 * request must shrink.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import { log } from "../base/log.ts";
import {
  cutLargest,
  type Result,
  resultText,
  resultTokens,
} from "./result_cut.ts";
import {
  MESSAGE_OVERHEAD,
  overheadOf,
  shapeOf,
  type Tokenize,
  type TokenLedger,
} from "./token_ledger.ts";

/** What the rounds are measured with. */
export interface RoundsOptions {
  ledger: TokenLedger;
  model: string;
  /** Counts through llama-server; absent where the server cannot. */
  tokenize: Tokenize | undefined;
  /** The reply's signal: counting stops with it. */
  signal: AbortSignal;
}

interface Added {
  message: ChatMessage;
  /** Tokens, once measured; a tool result's are its `result`'s. */
  tokens: number | null;
  result?: Result;
}

/** The messages this turn added after its question, and what they cost. */
export class TurnRounds {
  readonly #o: RoundsOptions;
  #added: Added[] = [];

  /** No message added yet. */
  constructor(options: RoundsOptions) {
    this.#o = options;
  }

  /** Adds a message (an assistant message, a tool result); measured by `measure`. */
  add(message: ChatMessage): void {
    this.#added.push({ message, tokens: null });
  }

  /** The messages in the order added, results as cut. */
  messages(): ChatMessage[] {
    return this.#added.map((entry) => entry.message);
  }

  /** The tool results measured so far. */
  results(): Result[] {
    return this.#added.flatMap((entry) => entry.result ? [entry.result] : []);
  }

  /** What the messages cost: as measured, else as estimated. */
  cost(): number {
    let cost = 0;
    for (const entry of this.#added) cost += this.#cost(entry);
    return cost;
  }

  /** Counts the messages added since the last call through llama-server; never rejects. */
  async measure(): Promise<void> {
    const { ledger, model, tokenize, signal } = this.#o;
    await Promise.all(this.#added.map(async (entry) => {
      if (entry.tokens !== null) return;
      const { message } = entry;
      if (message.role === "tool") {
        const count = await ledger.count(
          model,
          message.content,
          tokenize,
          signal,
          false,
        );
        entry.result = {
          full: message.content,
          tokens: count.tokens,
          kept: count.tokens,
        };
        entry.tokens = count.tokens;
      } else {
        const count = await ledger.countMessages(
          model,
          [message],
          tokenize,
          signal,
        );
        entry.tokens = count.tokens;
      }
    }));
  }

  /** Cuts the largest results by `over` tokens; returns the tokens saved. */
  cut(over: number): number {
    const entries = this.#added.filter((entry) => entry.result);
    const results = entries.map((entry) => entry.result!);
    const saved = cutLargest(results, over);
    if (saved === 0) return 0;
    for (const entry of entries) {
      const result = entry.result!;
      if (entry.message.role !== "tool") continue;
      entry.message = { ...entry.message, content: resultText(result) };
    }
    log.info("tool results cut to fit the context", {
      results: results.filter((r) => r.kept < r.tokens).length,
      saved,
    });
    return saved;
  }

  #cost(entry: Added): number {
    if (entry.result) return resultTokens(entry.result) + MESSAGE_OVERHEAD;
    if (entry.tokens !== null) return entry.tokens;
    const shape = shapeOf([entry.message]);
    return this.#o.ledger.estimate(this.#o.model, shape.bytes) +
      overheadOf(shape);
  }
}
