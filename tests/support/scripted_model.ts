/**
 * A model source in this process: each chat request is answered by a
 * function of its body with typed deltas, as `LlmClient` would give them
 * after parsing llama-server's stream. Prompt sizes and `/tokenize` counts
 * use the fake llama-server's tokenizer, so the budget and the ledger see
 * the same numbers as against the fake; counts can be held back to order
 * them against later events.
 */
import type { ModelSource } from "../../src/assistant/turn.ts";
import { AssistantError } from "../../src/base/errors.ts";
import { ContextOverflow } from "../../src/llm/http_error.ts";
import type { ModelChoice } from "../../src/llm/client.ts";
import type { Delta } from "../../src/llm/sse_stream.ts";
import { countTokens, promptTokens } from "./fake_llm_context.ts";

/** A chat request's body as the daemon sent it. */
export type Body = Record<string, unknown> & {
  messages: { role: string; content: string | null }[];
};

/**
 * What a request is answered with: the reply's deltas; `{held}`, deltas
 * after which the stream waits until the request is aborted (a reply to
 * stop); or an error, thrown as the client would.
 */
export type Answer = Delta[] | { held: Delta[] } | Error;

/** How the scripted model answers. */
export interface ScriptedModelOptions {
  id?: string;
  /** The context size `/props` reports; null: unknown. Default 4096. */
  nCtx?: number | null;
  /** The answer to request number `index` (0-based). */
  answer(body: Body, index: number): Answer | Promise<Answer>;
  /** False: a server without `/tokenize`. Default true. */
  tokenize?: boolean;
  /** What `/props` says of pictures (`modalities.vision`); default false. */
  vision?: boolean | null;
}

/** The deltas of a plain answer: its words as content, the finish, usage and timings as llama-server reports them. */
export function answerDeltas(
  body: Body,
  text: string,
  options: { usage?: boolean; timings?: boolean; finish?: string } = {},
): Delta[] {
  const deltas: Delta[] = text.split(/(?<= )/).filter((piece) => piece !== "")
    .map((piece) => ({ kind: "content", text: piece }));
  deltas.push({ kind: "finish", reason: options.finish ?? "stop" });
  const prompt = promptTokens(body);
  const predicted = countTokens(text);
  if (options.usage !== false) {
    deltas.push({ kind: "usage", used: prompt + predicted, prompt });
  }
  if (options.timings !== false) {
    deltas.push({
      kind: "timings",
      prompt_n: prompt,
      cache_n: 0,
      predicted_n: predicted,
      prompt_ms: 1,
      predicted_ms: 1,
    });
  }
  return deltas;
}

/** The question a chat request ends with (its date stamp and any summary removed). */
export function questionOf(body: Body): string {
  const last = body.messages.at(-1)?.content ?? "";
  return last.replace(/^[\s\S]*\n\n(?=\[)/, "").replace(/^\[[^\]]*\] /, "");
}

/** A model source whose answers are scripted; records every request. */
export class ScriptedModel implements ModelSource {
  /** Every chat body, in order. */
  readonly bodies: Body[] = [];
  /** Every text counted through `tokenize`, in order. */
  readonly counted: string[] = [];
  readonly #o: ScriptedModelOptions;
  #gate: Promise<void> | null = null;

  /** A model answering as `options.answer` says. */
  constructor(options: ScriptedModelOptions) {
    this.#o = options;
    // A server without `/tokenize`: the assistant sees no such method.
    if (options.tokenize === false) {
      Object.defineProperty(this, "tokenize", { value: undefined });
    }
  }

  /** The model, as a single llama-server names it. */
  chooseModel(): Promise<ModelChoice> {
    return Promise.resolve({
      id: this.#o.id ?? "/srv/models/scripted.gguf",
      router: false,
      nCtx: this.#o.nCtx === undefined ? 4096 : this.#o.nCtx,
      vision: this.#o.vision ?? false,
    });
  }

  /** Answers the request with its scripted deltas; an abort ends the stream with the abort's reason. */
  async chat(
    _model: ModelChoice,
    body: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ReadableStream<Delta>> {
    signal.throwIfAborted();
    const index = this.bodies.push(structuredClone(body) as Body) - 1;
    // As llama-server does, a prompt longer than the context is refused.
    const nCtx = this.#o.nCtx === undefined ? 4096 : this.#o.nCtx;
    const prompt = promptTokens(body);
    if (nCtx !== null && prompt > nCtx) {
      throw new AssistantError(
        `llama-server answered 400: request (${prompt} tokens) exceeds the available context size (${nCtx} tokens), try increasing it`,
        {
          code: "llama_http_error",
          cause: new ContextOverflow(prompt, nCtx),
        },
      );
    }
    const answer = await this.#o.answer(this.bodies[index]!, index);
    signal.throwIfAborted();
    if (answer instanceof Error) throw answer;
    if (Array.isArray(answer)) return ReadableStream.from(answer);
    // As a real stream does, an aborted request errors the stream it gave.
    return new ReadableStream<Delta>({
      start(controller) {
        for (const delta of answer.held) controller.enqueue(delta);
        signal.addEventListener(
          "abort",
          () => controller.error(signal.reason),
          { once: true },
        );
      },
    });
  }

  /** Tokens of a text, as the fake llama-server counts them; waits while counts are held. */
  async tokenize(
    _model: ModelChoice,
    text: string,
    signal: AbortSignal,
  ): Promise<number> {
    this.counted.push(text);
    const gate = this.#gate;
    if (gate) {
      await new Promise<void>((resolve, reject) => {
        const aborted = () => reject(signal.reason);
        signal.addEventListener("abort", aborted, { once: true });
        gate.then(() => {
          signal.removeEventListener("abort", aborted);
          resolve();
        });
      });
    }
    return countTokens(text);
  }

  /**
   * From now on, counts wait; the function returned lets the counts asked
   * meanwhile go on. Counts asked after `countFreely` do not wait.
   */
  holdCounts(): () => void {
    const gate = Promise.withResolvers<void>();
    this.#gate = gate.promise;
    return () => gate.resolve();
  }

  /** Counts asked from now on run at once; held ones still wait for their release. */
  countFreely(): void {
    this.#gate = null;
  }
}
