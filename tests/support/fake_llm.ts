/**
 * A fake llama-server on a loopback port, for every test that needs a model.
 *
 * It answers `/health`, `/v1/models`, `/models` and `/props` like a
 * single-model server or a router (captures in the shared fixtures),
 * `/tokenize` and `/apply-template` with a small tokenizer of its own, and
 * plays one scripted chat reply per request, in order, in the real chunk
 * format: headers only with the first chunk, one token per chunk, usage
 * after the finish chunk, `[DONE]`. Like llama-server it holds a context:
 * a prompt longer than the model's `nCtx` gets the 400
 * `exceed_context_size_error`, and a reply that reaches the context end (or
 * `max_tokens`) finishes with `"length"`. Each request is recorded with its
 * body, its prompt size and whether (and when) the client went away.
 */

import {
  type ChatContext,
  errorBody,
  randomId,
  reply,
  type Script,
  type Step,
} from "./fake_llm_scripts.ts";

import {
  applyTemplateAnswer,
  contextErrorBody,
  promptTokens as countPrompt,
  tokenizeAnswer,
} from "./fake_llm_context.ts";
import {
  type FakeModel,
  modelList,
  propsAnswer,
  resolveModel,
  SINGLE_ID,
} from "./fake_llm_models.ts";

export * from "./fake_llm_scripts.ts";
export type { FakeModel, ModelStatus } from "./fake_llm_models.ts";
export { countTokens, renderPrompt } from "./fake_llm_context.ts";

/** One request as the fake saw it. */
export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/props?model=tiny-a&autoload=false`. */
  path: string;
  url: URL;
  text: string;
  /** The body parsed as JSON, or undefined. */
  body: unknown;
  /** A chat request's prompt size in the fake's tokens; null for other requests. */
  promptTokens: number | null;
  /** performance.now() on arrival. */
  at: number;
  /** performance.now() when the client went away before the answer ended. */
  abortedAt: number | null;
  /** Resolves with `abortedAt` once the client goes away early. */
  aborted: Promise<number>;
  /** Resolves when the answer is over, either way. */
  done: Promise<"completed" | "aborted">;
}

/** Options of `FakeLlm.start`. */
export interface FakeLlmOptions {
  mode?: "single" | "router";
  /** Single: the first one is served. Router: all, with their statuses. */
  models?: FakeModel[];
  /** The answer when the queue is empty; default a short "Hello there." */
  defaultScript?: Script;
  /** Port to listen on (a server that "comes back" on a known port); default any free one. */
  port?: number;
}

type Handler = (
  request: Request,
  record: RecordedRequest,
) => Response | Promise<Response>;

const SSE_HEADERS = {
  "Server": "llama.cpp",
  "Access-Control-Allow-Origin": "",
  "X-Accel-Buffering": "no",
  "Content-Type": "text/event-stream",
};
const JSON_HEADERS = {
  "Server": "llama.cpp",
  "Access-Control-Allow-Origin": "",
  "Content-Type": "application/json; charset=utf-8",
};
/** What every endpoint answers while the model loads (`single/health_loading_503.json`). */
export const LOADING_BODY =
  '{"error":{"message":"Loading model","type":"unavailable_error","code":503}}';
const CUT = Symbol("cut");
const encoder = new TextEncoder();
/** Cursor-style queue: each `next()` gets the next item, waiting if needed. */
class Feed<T> {
  readonly items: T[] = [];
  #read = 0;
  #waiters: ((item: T) => void)[] = [];

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

/** The fake llama-server; `await using llm = await FakeLlm.start()`. */
export class FakeLlm implements AsyncDisposable {
  /** Base URL, e.g. http://127.0.0.1:40123. */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  /** Models a request made the router load (naming a model that was not loaded). */
  readonly autoloads: string[] = [];
  readonly mode: "single" | "router";
  #models: FakeModel[];
  readonly #queue: Script[] = [];
  readonly #defaultScript: Script;
  readonly #overrides = new Map<string, Handler>();
  readonly #all = new Feed<RecordedRequest>();
  readonly #chats = new Feed<RecordedRequest>();
  readonly #aborts = new Feed<RecordedRequest>();
  readonly #port: number;
  #closing = new AbortController();
  #server: Deno.HttpServer<Deno.NetAddr>;
  #stopped: Promise<void> | null = null;
  #loading = false;
  #promptScale = 1;

  private constructor(options: FakeLlmOptions) {
    this.mode = options.mode ?? "single";
    this.#models = options.models ??
      (this.mode === "single"
        ? [{ id: SINGLE_ID }]
        : [{ id: "tiny-a", status: "loaded" }, {
          id: "tiny-b",
          status: "unloaded",
        }]);
    this.#defaultScript = options.defaultScript ??
      reply({ content: ["Hello", " there", "."] });
    this.#server = this.#listen(options.port ?? 0);
    this.#port = this.#server.addr.port;
    this.url = `http://127.0.0.1:${this.#port}`;
  }

  #listen(port: number): Deno.HttpServer<Deno.NetAddr> {
    return Deno.serve({
      hostname: "127.0.0.1",
      port,
      signal: this.#closing.signal,
      onListen() {},
      onError: () =>
        new Response(errorBody(500), { status: 500, headers: JSON_HEADERS }),
    }, (request) => this.#handle(request));
  }

  /** Starts listening on an ephemeral loopback port. */
  static start(options: FakeLlmOptions = {}): Promise<FakeLlm> {
    return Promise.resolve(new FakeLlm(options));
  }

  /** The models now served; a copy. */
  get models(): FakeModel[] {
    return this.#models.map((model) => ({ ...model }));
  }

  /** Model names the requests so far named: `/props?model=` and chat bodies. Naming an unloaded one is what makes a router load it. */
  get namedModels(): string[] {
    const names: string[] = [];
    for (const request of this.requests) {
      const query = request.url.searchParams.get("model");
      if (query !== null) names.push(query);
      const body = request.body as { model?: unknown } | undefined;
      const model = typeof body === "object" && body !== null
        ? body.model
        : undefined;
      if (
        /\/chat\/completions$/.test(request.url.pathname) &&
        typeof model === "string"
      ) {
        names.push(model);
      }
    }
    return names;
  }

  /** While true, every endpoint answers 503 "Loading model", as llama-server does while it loads its model. */
  setLoading(loading: boolean): void {
    this.#loading = loading;
  }

  /** Stops listening (connections are refused from then on); held streams end. Requests stay recorded. */
  stop(): Promise<void> {
    this.#closing.abort();
    this.#stopped ??= this.#server.finished;
    return this.#stopped;
  }

  /** Listens again on the same port after `stop`. */
  async restart(): Promise<void> {
    await this.stop();
    this.#closing = new AbortController();
    this.#server = this.#listen(this.#port);
    this.#stopped = null;
  }

  /** Replaces the model list (e.g. a router unloading a model mid-test). */
  setModels(models: FakeModel[]): void {
    this.#models = models.map((model) => ({ ...model }));
  }

  /** Chat requests so far. */
  get chats(): RecordedRequest[] {
    return this.#chats.items;
  }

  /** Queues chat answers, one per request, in order. */
  enqueue(...scripts: Script[]): void {
    this.#queue.push(...scripts);
  }

  /**
   * Makes chat prompts count `factor` times the tokens `/tokenize` gives their
   * messages: a server whose template adds more than a client can know.
   */
  scalePrompts(factor: number): void {
    this.#promptScale = factor;
  }

  /** Answers `pathname` with `handler` instead (null restores the built-in route). */
  override(pathname: string, handler: Handler | null): void {
    if (handler) this.#overrides.set(pathname, handler);
    else this.#overrides.delete(pathname);
  }

  /** The next request not yet returned by this method; an abort rejects it. */
  nextRequest(signal?: AbortSignal): Promise<RecordedRequest> {
    return this.#all.next(signal);
  }

  /** The next request not yet returned by `nextRequest`, or null when none comes within ms. */
  requestWithin(ms: number): Promise<RecordedRequest | null> {
    return this.#all.next(AbortSignal.timeout(ms)).catch(() => null);
  }

  /** The next chat request not yet returned by this method. */
  nextChat(): Promise<RecordedRequest> {
    return this.#chats.next();
  }

  /** The next request the client abandoned, in abort order. */
  nextAbort(): Promise<RecordedRequest> {
    return this.#aborts.next();
  }

  /** Stops the server; held streams end. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const text = await request.text();
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const aborted = Promise.withResolvers<number>();
    const done = Promise.withResolvers<"completed" | "aborted">();
    const record: RecordedRequest = {
      method: request.method,
      path: url.pathname + url.search,
      url,
      text,
      body,
      promptTokens: null,
      at: performance.now(),
      abortedAt: null,
      aborted: aborted.promise,
      done: done.promise,
    };
    let over = false;
    const finish = (how: "completed" | "aborted") => {
      if (over) return;
      over = true;
      if (how === "aborted") {
        record.abortedAt = performance.now();
        aborted.resolve(record.abortedAt);
        this.#aborts.push(record);
      }
      done.resolve(how);
    };
    this.requests.push(record);
    this.#all.push(record);
    const isChat = request.method === "POST" &&
      /^(\/v1)?\/chat\/completions$/.test(url.pathname);
    if (isChat) this.#chats.push(record);
    if (this.#loading) {
      finish("completed");
      return this.#json(LOADING_BODY, 503);
    }
    const override = this.#overrides.get(url.pathname);
    if (override) {
      finish("completed");
      return await override(request, record);
    }
    if (!isChat) {
      finish("completed");
      return request.method === "POST" ? this.#post(url, body) : this.#get(url);
    }
    return this.#chat(request, url, body, record, finish);
  }

  #json(value: unknown, status = 200): Response {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return new Response(text, { status, headers: JSON_HEADERS });
  }

  #get(url: URL): Response {
    switch (url.pathname) {
      case "/health":
        return this.#json({ status: "ok" });
      case "/models":
      case "/v1/models":
        return this.#json(modelList(this.mode, this.#models));
      case "/props":
        return this.#props(url);
      default:
        return this.#json(errorBody(404), 404);
    }
  }

  #post(url: URL, body: unknown): Response {
    if (this.mode === "router") {
      const model = (body as { model?: unknown } | undefined)?.model;
      const resolved = resolveModel(this.#models, model, url, this.autoloads);
      if ("body" in resolved) return this.#json(resolved.body, resolved.status);
    }
    const answer = url.pathname === "/tokenize"
      ? tokenizeAnswer(body)
      : url.pathname === "/apply-template"
      ? applyTemplateAnswer(body)
      : { status: 404, body: errorBody(404) };
    return this.#json(answer.body, answer.status);
  }

  #props(url: URL): Response {
    const answer = propsAnswer(this.mode, this.#models, url, this.autoloads);
    return this.#json(answer.body, answer.status);
  }

  async #chat(
    request: Request,
    url: URL,
    body: unknown,
    record: RecordedRequest,
    finish: (how: "completed" | "aborted") => void,
  ): Promise<Response> {
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      finish("completed");
      return this.#json(errorBody(400, "Failed to parse the request"), 400);
    }
    const fields = body as Record<string, unknown>;
    let model = this.#models[0]?.id ?? SINGLE_ID;
    let nCtx = this.#models[0]?.nCtx ?? 4096;
    if (this.mode === "router") {
      const resolved = resolveModel(
        this.#models,
        fields.model,
        url,
        this.autoloads,
      );
      if ("body" in resolved) {
        finish("completed");
        return this.#json(resolved.body, resolved.status);
      }
      resolved.status = "loaded";
      model = resolved.id;
      nCtx = resolved.nCtx ?? 4096;
    }
    const promptTokens = Math.ceil(
      countPrompt(fields) * this.#promptScale,
    );
    record.promptTokens = promptTokens;
    if (promptTokens > nCtx) {
      finish("completed");
      return this.#json(contextErrorBody(promptTokens, nCtx), 400);
    }
    const maxTokens = typeof fields.max_tokens === "number" &&
        fields.max_tokens > 0
      ? fields.max_tokens
      : Infinity;
    const script = this.#queue.shift() ?? this.#defaultScript;
    if ("body" in script) {
      finish("completed");
      return new Response(script.body, {
        status: script.status,
        headers: { ...JSON_HEADERS, ...script.headers },
      });
    }
    const options = fields.stream_options;
    const context: ChatContext = {
      body: fields,
      model,
      includeUsage: typeof options === "object" && options !== null &&
        (options as Record<string, unknown>).include_usage === true,
      id: `chatcmpl-${randomId()}`,
      created: Math.floor(Date.now() / 1000),
      promptTokens,
      room: Math.min(nCtx - promptTokens, maxTokens),
    };
    const gone = new AbortController();
    const signal = AbortSignal.any([gone.signal, this.#closing.signal]);
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
    const chunks = run(script.steps(context), signal, watch);
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
      headers: { ...SSE_HEADERS, ...script.headers },
    });
  }
}
