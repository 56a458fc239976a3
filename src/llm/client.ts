/**
 * The llama-server client: which model to use (never one that would make a
 * router load or swap), its context size, the chat request body, and the
 * streamed chat request itself.
 */
import type { ChatMessage } from "./chat_types.ts";
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import { contextOverflow, httpError } from "./http_error.ts";
import { type Delta, deltaStream } from "./sse_stream.ts";
import { isRecord } from "../base/is_record.ts";

/** The model a turn uses, as `chooseModel` found it. */
export interface ModelChoice {
  id: string;
  router: boolean;
  nCtx: number | null;
  /** Whether it reads pictures (`/props` `modalities.vision`); null when unknown. */
  vision?: boolean | null;
}

/** How a lookup reads the model. */
export interface LookupOptions {
  /** Asks `/props` again rather than trusting what was kept of it: llama-server may have restarted with other flags (`--mmproj`, `-c`) unseen. */
  fresh?: boolean;
}

/** Told of every turn's model lookup, so the backend state follows the turns. */
export interface LookupObserver {
  /** The lookup found the model a turn uses. */
  chosen(choice: ModelChoice): void;
  /** The lookup failed (not by the caller's abort). */
  failed(): void;
}

/** How to reach llama-server. */
export interface LlmOptions {
  /** Base URL, e.g. http://127.0.0.1:8080. */
  url: string;
  /** Config key `model`: preferred among several loaded router models. */
  model?: string;
  /** stall_timeout in ms. */
  stallMs: number;
  /** Injected for tests; the global fetch otherwise. */
  fetch?: typeof fetch;
  /** Told of each model lookup. */
  observer?: LookupObserver;
}

/** What `chatBody` builds a request from. */
export interface ChatBodyInput {
  model: string;
  messages: ChatMessage[];
  tools: unknown[];
  thinking: boolean;
  /** The config's [request] table. */
  extra: Record<string, unknown>;
  /** The last round after max_tool_rounds. */
  toolChoiceNone?: boolean;
  /**
   * `n_cache_reuse` to send: the smallest chunk of a cached prompt the server
   * may shift into place after a removed span. A default, not a field of the
   * daemon's own: a `[request]` value wins; 0 or absent sends none.
   */
  cacheReuse?: number;
}

/** Builds the request body: `n_cache_reuse` (a default), then extra, then the daemon's own fields, which win; chat_template_kwargs merged key by key with enable_thinking. */
export function chatBody(input: ChatBodyInput): Record<string, unknown> {
  const { tools: _tools, ...extra } = input.extra;
  const kwargs = isRecord(extra.chat_template_kwargs)
    ? extra.chat_template_kwargs
    : {};
  const reuse = input.cacheReuse ?? 0;
  const body: Record<string, unknown> = {
    ...(reuse > 0 ? { n_cache_reuse: reuse } : {}),
    ...extra,
    model: input.model,
    messages: input.messages,
    stream: true,
    stream_options: { include_usage: true },
    chat_template_kwargs: { ...kwargs, enable_thinking: input.thinking },
  };
  // The tools are the daemon's: an empty list is left out rather than sent.
  if (input.tools.length > 0) body.tools = input.tools;
  if (input.toolChoiceNone) body.tool_choice = "none";
  return body;
}

/** One entry of `GET /v1/models`, as far as model choice needs it. */
export interface ModelEntry {
  id: string;
  /** Other names the router answers to (`--alias`, presets). */
  aliases: string[];
  status: string | null;
  failed: boolean;
  metaCtx: number | null;
}

/** Reads `GET /v1/models`; AssistantError when it has no data array. */
export function readEntries(list: unknown): ModelEntry[] {
  if (!isRecord(list) || !Array.isArray(list.data)) {
    throw new AssistantError("malformed model list", {
      code: "malformed_model_list",
      cause: new TypeError("GET /v1/models has no data array"),
    });
  }
  const entries: ModelEntry[] = [];
  for (const item of list.data) {
    if (!isRecord(item) || typeof item.id !== "string") continue;
    const status = isRecord(item.status) ? item.status : null;
    const meta = isRecord(item.meta) ? item.meta : null;
    entries.push({
      id: item.id,
      aliases: Array.isArray(item.aliases)
        ? item.aliases.filter((alias) => typeof alias === "string")
        : [],
      status: status && typeof status.value === "string" ? status.value : null,
      failed: status?.failed === true,
      metaCtx: typeof meta?.n_ctx === "number" && meta.n_ctx > 0
        ? meta.n_ctx
        : null,
    });
  }
  return entries;
}

/** The never-swap rule: a loaded model (the preferred one first), else a sleeping one. */
export function pick(
  entries: ModelEntry[],
  preferred: string,
): ModelEntry | null {
  const router = entries.some((entry) => entry.status !== null);
  if (!router) return entries[0] ?? null;
  for (const wanted of ["loaded", "sleeping"]) {
    const usable = entries.filter((entry) =>
      entry.status === wanted && !entry.failed
    );
    const choice = usable.find((entry) =>
      preferred !== "" &&
      (entry.id === preferred || entry.aliases.includes(preferred))
    ) ?? usable[0];
    if (choice) return choice;
  }
  return null;
}

/** The client of one llama-server (or router). */
export class LlmClient {
  readonly #url: string;
  readonly #base: string;
  readonly #preferred: string;
  readonly #stallMs: number;
  readonly #fetch: typeof fetch;
  readonly #props = new Map<string, { nCtx: number; vision: boolean | null }>();
  readonly #observer: LookupObserver | null;

  /** Creates a client; nothing is fetched until a turn asks. */
  constructor(options: LlmOptions) {
    this.#url = options.url;
    this.#base = options.url.replace(/\/+$/, "");
    this.#preferred = options.model ?? "";
    this.#stallMs = options.stallMs;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#observer = options.observer ?? null;
  }

  /** GET /v1/models every call; the never-swap rule; n_ctx and vision from /props (kept per model until llama-server fails, or `fresh`). */
  async chooseModel(
    signal: AbortSignal,
    options: LookupOptions = {},
  ): Promise<ModelChoice> {
    let choice: ModelChoice;
    try {
      if (options.fresh) this.#props.clear();
      choice = await this.#choose(signal);
    } catch (error) {
      if (!signal.aborted) {
        this.forgetProps();
        this.#observer?.failed();
      }
      throw error;
    }
    this.#observer?.chosen(choice);
    return choice;
  }

  /**
   * Forgets what `/props` said of every model. A llama-server that went
   * away may come back with other flags (`--mmproj` added, a smaller `-c`)
   * under the same model id: the next lookup asks it again.
   */
  forgetProps(): void {
    this.#props.clear();
  }

  async #choose(signal: AbortSignal): Promise<ModelChoice> {
    const entries = readEntries(await this.#getJson("/v1/models", signal));
    const entry = pick(entries, this.#preferred);
    if (!entry) {
      log.warn("no model loaded", { models: entries.length });
      throw new AssistantError("no model loaded", { code: "no_model_loaded" });
    }
    const router = entry.status !== null;
    const { nCtx, vision } = await this.#propsOf(entry, router, signal);
    log.debug("model chosen", { model: entry.id, router, n_ctx: nCtx });
    return { id: entry.id, router, nCtx, vision };
  }

  /** POST /v1/chat/completions (router: ?autoload=false); resolves to the delta stream once headers arrive. */
  async chat(
    model: ModelChoice,
    body: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ReadableStream<Delta>> {
    const internal = new AbortController();
    const request = AbortSignal.any([signal, internal.signal]);
    const stall = () => {
      if (internal.signal.aborted) return;
      log.warn("llama-server stalled", { ms: this.#stallMs });
      internal.abort(
        new AssistantError("llama-server stalled", {
          code: "llama_stalled",
          cause: new DOMException(
            `No data for ${this.#stallMs} ms`,
            "TimeoutError",
          ),
        }),
      );
    };
    // llama-server sends its headers only with the first token, so the wait
    // for them is prompt processing and falls under the same stall limit.
    const timer = setTimeout(stall, this.#stallMs);
    try {
      const path = model.router
        ? "/v1/chat/completions?autoload=false"
        : "/v1/chat/completions";
      const response = await this.#request(path, request, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
        },
        body: JSON.stringify(body),
      });
      const type = response.headers.get("content-type") ?? "";
      if (!response.body || !type.includes("text/event-stream")) {
        await response.body?.cancel();
        throw new AssistantError("malformed stream", {
          code: "malformed_stream",
          cause: new TypeError(`Chat answered with content type "${type}"`),
        });
      }
      return deltaStream(response.body, {
        stallMs: this.#stallMs,
        onStall: stall,
        signal: request,
      });
    } catch (error) {
      internal.abort(error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * POST /tokenize: how many tokens the model makes of `text` (special tokens
   * parsed, as in a chat prompt). A router is asked with the model named and
   * autoload off, so counting never loads a model.
   */
  async tokenize(
    model: ModelChoice,
    text: string,
    signal: AbortSignal,
  ): Promise<number> {
    const bounded = AbortSignal.any([
      signal,
      AbortSignal.timeout(this.#stallMs),
    ]);
    const path = model.router ? "/tokenize?autoload=false" : "/tokenize";
    const response = await this.#request(path, bounded, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: model.id, content: text }),
    });
    const answer = await this.#read(response, bounded);
    let tokens: unknown;
    try {
      tokens = (JSON.parse(answer) as { tokens?: unknown } | null)?.tokens;
    } catch (error) {
      throw new AssistantError("malformed answer from llama-server", {
        code: "malformed_answer",
        cause: error,
      });
    }
    if (!Array.isArray(tokens)) {
      throw new AssistantError("malformed answer from llama-server", {
        code: "malformed_answer",
        cause: new TypeError("POST /tokenize has no tokens array"),
      });
    }
    return tokens.length;
  }

  /** What `/props` says of a model: its context size (else the list's `meta.n_ctx`) and whether it reads pictures; cached per model. */
  async #propsOf(
    entry: ModelEntry,
    router: boolean,
    signal: AbortSignal,
  ): Promise<{ nCtx: number | null; vision: boolean | null }> {
    const cached = this.#props.get(entry.id);
    if (cached !== undefined) return cached;
    const unknown = { nCtx: entry.metaCtx, vision: null };
    // Asking a router about a model that is not loaded would load it; a
    // sleeping one would wake. Only a loaded model (or a single server) is asked.
    if (router && entry.status !== "loaded") return unknown;
    const path = router
      ? `/props?model=${encodeURIComponent(entry.id)}&autoload=false`
      : "/props";
    try {
      const props = await this.#getJson(path, signal);
      const settings = isRecord(props)
        ? props.default_generation_settings
        : null;
      const nCtx = isRecord(settings) ? settings.n_ctx : null;
      const modalities = isRecord(props) ? props.modalities : null;
      const vision = isRecord(modalities) &&
          typeof modalities.vision === "boolean"
        ? modalities.vision
        : null;
      if (typeof nCtx === "number" && nCtx > 0) {
        const known = { nCtx, vision };
        this.#props.set(entry.id, known);
        return known;
      }
      log.warn("props without n_ctx", { model: entry.id });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      log.warn("props failed", {
        model: entry.id,
        error: describeError(error),
      });
    }
    return unknown;
  }

  async #getJson(path: string, signal: AbortSignal): Promise<unknown> {
    const bounded = AbortSignal.any([
      signal,
      AbortSignal.timeout(this.#stallMs),
    ]);
    const response = await this.#request(path, bounded);
    const text = await this.#read(response, bounded);
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new AssistantError("malformed answer from llama-server", {
        code: "malformed_answer",
        cause: error,
      });
    }
  }

  /** One request with the error messages clients see; an HTTP error status throws. */
  async #request(
    path: string,
    signal: AbortSignal,
    init: RequestInit = {},
  ): Promise<Response> {
    let response: Response;
    try {
      response = await this.#fetch(this.#base + path, { ...init, signal });
    } catch (error) {
      throw this.#failure(error, signal);
    }
    if (response.status >= 400) {
      const text = await this.#read(response, signal);
      log.warn("llama-server error status", {
        path: path.split("?")[0],
        status: response.status,
      });
      const error = httpError(response, text, path);
      // A server failing (or loading a model again), or holding a context
      // other than /props said, is not the one the kept props describe.
      if (response.status >= 500 || contextOverflow(error)) this.forgetProps();
      throw error;
    }
    return response;
  }

  async #read(response: Response, signal: AbortSignal): Promise<string> {
    try {
      return await response.text();
    } catch (error) {
      throw this.#failure(error, signal);
    }
  }

  /** Names a failed fetch: the caller's abort and a stall pass as they are. */
  #failure(error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) {
      const reason: unknown = signal.reason;
      if (reason instanceof DOMException && reason.name === "TimeoutError") {
        return new AssistantError("llama-server stalled", {
          code: "llama_stalled",
          cause: reason,
        });
      }
      return reason;
    }
    if (error instanceof AssistantError) return error;
    this.forgetProps();
    return new AssistantError(`llama-server unreachable at ${this.#url}`, {
      code: "llama_unreachable",
      cause: error,
    });
  }
}
