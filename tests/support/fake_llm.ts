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
 * `max_tokens`) finishes with `"length"`. It keeps a prompt cache per slot
 * as llama-server does (`fake_llm_cache.ts`): `timings.cache_n` and
 * `prompt_n` say what each request reused and evaluated, `cacheLog` lists
 * them. Each request is recorded with its body, its prompt size, what the
 * cache gave it and whether (and when) the client went away.
 */

import { errorBody, randomId, reply, type Script } from "./fake_llm_scripts.ts";
import { contextErrorBody, promptTokenList } from "./fake_llm_context.ts";
import { type CacheUse, ModelCaches } from "./fake_llm_cache.ts";
import { Feed, play, Transcript } from "./fake_llm_play.ts";
import {
  namedModels,
  type RecordedRequest,
  recordRequest,
} from "./fake_llm_record.ts";
import {
  type FakeModel,
  plainAnswer,
  resolveModel,
  SINGLE_ID,
} from "./fake_llm_models.ts";
import { mediaRefusal, wireAnswer } from "./fake_llm_wire.ts";

export * from "./fake_llm_scripts.ts";
export type { FakeModel, ModelStatus } from "./fake_llm_models.ts";
export { countTokens, renderPrompt } from "./fake_llm_context.ts";
export type { CacheUse } from "./fake_llm_cache.ts";
export type { RecordedRequest } from "./fake_llm_record.ts";

/** Options of `FakeLlm.start`. */
export interface FakeLlmOptions {
  mode?: "single" | "router";
  /** Single: the first one is served. Router: all, with their statuses. */
  models?: FakeModel[];
  /** The answer when the queue is empty; default a short "Hello there." */
  defaultScript?: Script;
  /** Port to listen on (a server that "comes back" on a known port); default any free one. */
  port?: number;
  /** Slots per model (`--parallel`); default 1. A model's own `slots` wins. */
  slots?: number;
  /** False: models whose cache cannot shift (SWA, recurrent, hybrid) ignore `n_cache_reuse`; default true. A model's own `shift` wins. */
  shift?: boolean;
  /** The host-memory prompt cache (`--cache-ram`); default true, as in llama-server. */
  cacheRam?: boolean;
}

type Handler = (
  request: Request,
  record: RecordedRequest,
) => Response | Promise<Response>;

const JSON_HEADERS = {
  "Server": "llama.cpp",
  "Access-Control-Allow-Origin": "",
  "Content-Type": "application/json; charset=utf-8",
};
/** What every endpoint answers while the model loads (`single/health_loading_503.json`). */
export const LOADING_BODY =
  '{"error":{"message":"Loading model","type":"unavailable_error","code":503}}';

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
  readonly #caches: ModelCaches;
  readonly #slots: number;
  /** Chat streams in flight, by model: what `/slots` reports as processing. */
  readonly #busy = new Map<string, number>();

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
    this.#slots = options.slots ?? 1;
    this.#caches = new ModelCaches({
      slots: this.#slots,
      shift: options.shift ?? true,
      cacheRam: options.cacheRam ?? true,
    });
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

  /** Listens again on the same port after `stop`, with empty caches, as a restarted server. */
  async restart(): Promise<void> {
    await this.stop();
    this.clearCache();
    this.#closing = new AbortController();
    this.#server = this.#listen(this.#port);
    this.#stopped = null;
  }

  /** Replaces the model list (e.g. a router unloading a model mid-test); a model no longer loaded loses its cache. */
  setModels(models: FakeModel[]): void {
    this.#models = models.map((model) => ({ ...model }));
    this.#caches.keepLoaded(this.#models);
  }

  /** What the prompt cache gave each chat request it evaluated, in arrival order. */
  get cacheLog(): CacheUse[] {
    return this.chats.flatMap((request) => request.cache ?? []);
  }

  /** The sums over `cacheLog`: requests, prompt tokens evaluated, prompt tokens reused. */
  cacheTotals(): { requests: number; promptN: number; cacheN: number } {
    const log = this.cacheLog;
    return {
      requests: log.length,
      promptN: log.reduce((sum, use) => sum + use.promptN, 0),
      cacheN: log.reduce((sum, use) => sum + use.cacheN, 0),
    };
  }

  /** Empties every slot and the host-memory cache, as a server that reloaded its model. */
  clearCache(): void {
    this.#caches.clear();
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

  /** Model names the requests so far named: `/props?model=` and chat bodies. Naming an unloaded one is what makes a router load it. */
  get namedModels(): string[] {
    return namedModels(this.requests);
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
    const { record, finish } = recordRequest(
      request,
      url,
      text,
      body,
      (record) => this.#aborts.push(record),
    );
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
      const state = {
        mode: this.mode,
        models: this.#models,
        slots: this.#slots,
        busy: this.#busy,
      };
      const wire = wireAnswer(state, request.method, url, body);
      if (wire) {
        this.#caches.keepLoaded(this.#models);
        return this.#json(wire.body, wire.status);
      }
      const answer = plainAnswer(
        this.mode,
        this.#models,
        request.method,
        url,
        body,
        this.autoloads,
      );
      return this.#json(answer.body, answer.status);
    }
    return this.#chat(request, url, body, record, finish);
  }

  #json(value: unknown, status = 200): Response {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return new Response(text, { status, headers: JSON_HEADERS });
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
    let served: FakeModel = this.#models[0] ?? { id: SINGLE_ID };
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
      served = resolved;
    }
    const refused = mediaRefusal(served, fields);
    if (refused) {
      finish("completed");
      return this.#json(refused.body, refused.status);
    }
    const nCtx = served.nCtx ?? 4096;
    const tokens = promptTokenList(fields);
    const promptTokens = Math.ceil(tokens.length * this.#promptScale);
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
    const cache = this.#caches.begin(
      served,
      tokens,
      fields,
      promptTokens,
      this.#promptScale,
    );
    record.cache = cache.use;
    this.#busy.set(served.id, (this.#busy.get(served.id) ?? 0) + 1);
    const transcript = new Transcript();
    const options = fields.stream_options;
    return await play({
      request,
      steps: script.steps,
      ...(script.headers ? { headers: script.headers } : {}),
      context: {
        body: fields,
        model: served.id,
        includeUsage: typeof options === "object" && options !== null &&
          (options as Record<string, unknown>).include_usage === true,
        id: `chatcmpl-${randomId()}`,
        created: Math.floor(Date.now() / 1000),
        promptTokens,
        cachedTokens: cache.use.cacheN,
        room: Math.min(nCtx - promptTokens, maxTokens),
      },
      closing: this.#closing.signal,
      sent: (text) => transcript.add(text),
      finish: (how) => {
        cache.end(transcript.reply(), transcript.finish);
        this.#busy.set(served.id, (this.#busy.get(served.id) ?? 1) - 1);
        finish(how);
      },
    });
  }
}
