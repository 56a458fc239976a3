/**
 * How the fake llama-server streams a script: steps paced from the start,
 * headers only with the first chunk (as llama-server sends them), a client
 * that leaves noticed before and after, and a transcript of what the model
 * "generated" for the prompt cache.
 */
import type { ChatContext, Step } from "./fake_llm_scripts.ts";
import type { GeneratedReply } from "./fake_llm_context.ts";

/** Headers of a streamed answer, as captured. */
export const SSE_HEADERS = {
  "Server": "llama.cpp",
  "Access-Control-Allow-Origin": "",
  "X-Accel-Buffering": "no",
  "Content-Type": "text/event-stream",
};

const CUT = Symbol("cut");
const encoder = new TextEncoder();

/** Cursor-style queue: each `next()` gets the next item, waiting if needed. */
export class Feed<T> {
  readonly items: T[] = [];
  #read = 0;
  #waiters: ((item: T) => void)[] = [];

  /** Adds an item, handing it to the oldest waiter. */
  push(item: T): void {
    this.items.push(item);
    while (this.#waiters.length > 0 && this.#read < this.items.length) {
      this.#waiters.shift()!(this.items[this.#read++]!);
    }
  }

  /** The next item; an abort rejects and gives up the place in line, so no item is lost. */
  next(signal?: AbortSignal): Promise<T> {
    if (this.#read < this.items.length) {
      return Promise.resolve(this.items[this.#read++]!);
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const waiter = (item: T) => {
        signal?.removeEventListener("abort", quit);
        resolve(item);
      };
      const quit = () => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", quit, { once: true });
      this.#waiters.push(waiter);
    });
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Runs steps into text chunks; pacing is measured from the start so late timers catch up. */
async function* run(
  steps: Iterable<Step> | AsyncIterable<Step>,
  signal: AbortSignal,
  beforeWait: () => void,
): AsyncGenerator<string> {
  let deadline = performance.now();
  for await (const step of steps) {
    if (signal.aborted) return;
    if ("send" in step) {
      yield step.send;
      continue;
    }
    beforeWait();
    if ("delayMs" in step) {
      // After a long hiccup, start pacing afresh rather than bursting.
      deadline = Math.max(deadline, performance.now() - 100) + step.delayMs;
      const wait = deadline - performance.now();
      if (wait >= 1) await sleep(wait, signal);
    } else if ("hold" in step) {
      await sleep(2 ** 31 - 1, signal);
      return;
    } else {
      throw CUT;
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What the streamed chunks carried, read back: the reply as the model generated it. */
export class Transcript {
  #reasoning = "";
  #content = "";
  readonly #calls: { name: string; arguments: string }[] = [];
  /** The finish reason, once a chunk gave one. */
  finish: string | null = null;

  /** Reads the chunks in one piece of the body; anything that is not a chunk adds nothing. */
  add(text: string): void {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data: {")) continue;
      let chunk: unknown;
      try {
        chunk = JSON.parse(line.slice("data: ".length));
      } catch {
        continue;
      }
      const choices = isRecord(chunk) && Array.isArray(chunk.choices)
        ? chunk.choices
        : [];
      for (const choice of choices) this.#choice(choice);
    }
  }

  #choice(choice: unknown): void {
    if (!isRecord(choice)) return;
    if (typeof choice.finish_reason === "string") {
      this.finish = choice.finish_reason;
    }
    const delta = isRecord(choice.delta) ? choice.delta : {};
    if (typeof delta.reasoning_content === "string") {
      this.#reasoning += delta.reasoning_content;
    }
    if (typeof delta.content === "string") this.#content += delta.content;
    for (
      const call of Array.isArray(delta.tool_calls) ? delta.tool_calls : []
    ) {
      if (!isRecord(call) || typeof call.index !== "number") continue;
      const fn = isRecord(call.function) ? call.function : {};
      const entry = this.#calls[call.index] ??= { name: "", arguments: "" };
      if (typeof fn.name === "string" && entry.name === "") {
        entry.name = fn.name;
      }
      if (typeof fn.arguments === "string") entry.arguments += fn.arguments;
    }
  }

  /** The reply so far. */
  reply(): GeneratedReply {
    return {
      reasoning: this.#reasoning,
      content: this.#content,
      calls: this.#calls.filter((call) => call !== undefined),
    };
  }
}

/** What `play` streams, and to whom it reports. */
export interface PlayOptions {
  /** The client's request: its signal tells that the client left before the headers went out. */
  request: Request;
  steps: (context: ChatContext) => Iterable<Step> | AsyncIterable<Step>;
  headers?: Record<string, string>;
  context: ChatContext;
  /** The server closing: held streams end. */
  closing: AbortSignal;
  /** Called once, when the answer is over, either way. */
  finish: (how: "completed" | "aborted") => void;
  /** Every piece of body text, as it goes out. */
  sent: (text: string) => void;
}

/** Streams a script as llama-server would: nothing until its first chunk, then chunk by chunk as the client reads. */
export async function play(options: PlayOptions): Promise<Response> {
  const { request, finish } = options;
  const gone = new AbortController();
  const signal = AbortSignal.any([gone.signal, options.closing]);
  const leave = () => {
    finish("aborted");
    gone.abort();
  };
  // Like llama-server, send the headers only with the first chunk; until
  // then only the request's signal tells that the client went away. It is
  // watched only when the script waits before its first chunk, as Deno
  // warns once about any request whose signal was touched.
  let watching = false;
  let started = false;
  const watch = () => {
    if (started || watching) return;
    watching = true;
    request.signal.addEventListener("abort", leave);
    if (request.signal.aborted) leave();
  };
  const chunks = run(options.steps(options.context), signal, watch);
  let first: IteratorResult<string> | typeof CUT;
  try {
    first = await chunks.next();
  } catch (error) {
    if (error !== CUT) throw error;
    first = CUT;
  } finally {
    started = true;
    if (watching) request.signal.removeEventListener("abort", leave);
  }
  if (gone.signal.aborted) {
    await chunks.return(undefined);
    return new Response(null);
  }
  let closed = false;
  // A client that closes once it has read [DONE] completed the reply.
  let delivered = false;
  const send = (
    controller: ReadableStreamDefaultController<Uint8Array>,
    text: string,
  ) => {
    if (text.includes("data: [DONE]")) delivered = true;
    options.sent(text);
    controller.enqueue(encoder.encode(text));
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      if (first === CUT || first.done) {
        closed = true;
        finish("completed");
        if (first === CUT) controller.error(undefined);
        else controller.close();
      } else {
        send(controller, first.value);
      }
    },
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (closed) return;
        if (next.done) {
          closed = true;
          finish("completed");
          controller.close();
        } else {
          send(controller, next.value);
        }
      } catch (error) {
        if (closed) return;
        closed = true;
        finish("completed");
        // An error without a reason drops the connection quietly.
        controller.error(error === CUT ? undefined : error);
      }
    },
    async cancel() {
      closed = true;
      if (delivered) finish("completed");
      else leave();
      await chunks.return(undefined);
    },
  }, { highWaterMark: 0 });
  return new Response(stream, {
    headers: { ...SSE_HEADERS, ...options.headers },
  });
}
