/**
 * What llama-server can do right now, known before anyone asks. Probes use
 * `GET /health` and `GET /v1/models` only: nothing that loads, wakes or swaps
 * a model. The watcher probes at start, every `backend_poll` seconds while a
 * client is connected and no reply is in flight, and after a turn's model
 * lookup fails; a lookup that succeeds is itself the news. Clients hear of
 * the state only when something in it changes.
 */
import type { BackendState, BackendView } from "../protocol.ts";
import { log } from "../log.ts";
import {
  type LookupObserver,
  type ModelChoice,
  pick,
  readEntries,
} from "./client.ts";

/** The state before the first probe has answered. */
export function unknownBackend(url: string): BackendView {
  return { state: "unknown", url, model: null, ctx_max: null, message: null };
}

/** What one probe needs. */
export interface ProbeOptions {
  /** Base URL of llama-server (or its router). */
  url: string;
  /** Config key `model`: preferred among several loaded router models. */
  model?: string;
  /** Bound of the whole probe, in ms. */
  timeoutMs: number;
  /** Ends the probe early (shutdown). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** The context size a turn measured for a model (from /props), if any. */
  knownContext?: (model: string) => number | undefined;
  /** Asked between the two requests; false abandons the probe (a reply started). */
  proceed?: () => boolean;
  /** A single server's `up` state as last found: `/health` answering 200 confirms it without the model list. */
  confirm?: BackendView;
}

/** What a probe found, and whether llama-server is a router (null when its model list was not read). */
export interface Probe {
  view: BackendView;
  router: boolean | null;
}

/** A request's body, when it answered 200. */
type Answer = { body: string };

/** Probes llama-server once. Never throws. */
export function probeBackend(
  options: Omit<ProbeOptions, "proceed">,
): Promise<Probe>;
/** Probes llama-server once; null when `proceed` said to stop. Never throws. */
export function probeBackend(options: ProbeOptions): Promise<Probe | null>;
export async function probeBackend(
  options: ProbeOptions,
): Promise<Probe | null> {
  // A timer cleared at the end, unlike AbortSignal.timeout's: an idle
  // daemon should not wake up for a probe that is long over.
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), options.timeoutMs);
  try {
    return await probeWithin(options, timeout.signal);
  } finally {
    clearTimeout(timer);
  }
}

async function probeWithin(
  options: ProbeOptions,
  timeout: AbortSignal,
): Promise<Probe | null> {
  const { url } = options;
  const base = url.replace(/\/+$/, "");
  const signal = options.signal
    ? AbortSignal.any([options.signal, timeout])
    : timeout;
  const fetcher = options.fetch ?? globalThis.fetch;
  const found = (
    state: BackendState,
    message: string | null,
    router: boolean | null = null,
    model: string | null = null,
    ctx: number | null = null,
  ): Probe => ({
    view: { state, url, model, ctx_max: ctx, message },
    router,
  });

  const get = async (path: string): Promise<Answer | Probe> => {
    try {
      const response = await fetcher(base + path, { signal });
      const body = await response.text();
      if (response.status === 503) {
        // llama-server answers every endpoint so while it loads its model.
        return found("loading", "llama-server is loading its model");
      }
      if (response.status !== 200) {
        return found(
          "down",
          `unexpected answer from ${url}: ${path} answered ${response.status}`,
        );
      }
      return { body };
    } catch (error) {
      return found("down", failure(error, url, timeout, options.timeoutMs));
    }
  };

  const health = await get("/health");
  if ("view" in health) return health;
  // A single server's model changes only with a restart, which /health sees
  // (no connection, or 503 while the new model loads).
  if (options.confirm) return { view: options.confirm, router: false };
  if (options.proceed && !options.proceed()) return null;
  const models = await get("/v1/models");
  if ("view" in models) return models;
  let entries;
  try {
    entries = readEntries(JSON.parse(models.body));
  } catch {
    return found(
      "down",
      `unexpected answer from ${url}: /v1/models is not a model list`,
    );
  }
  const router = entries.some((entry) => entry.status !== null);
  const preferred = options.model ?? "";
  const chosen = pick(entries, preferred);
  if (chosen) {
    const ctx = options.knownContext?.(chosen.id) ?? chosen.metaCtx;
    return found("up", null, router, chosen.id, ctx);
  }
  if (!router) return found("no_model", "llama-server lists no model", false);
  const loading = entries.filter((entry) =>
    entry.status === "loading" && !entry.failed
  );
  const next =
    loading.find((entry) =>
      entry.id === preferred || entry.aliases.includes(preferred)
    ) ?? loading[0];
  if (next) {
    return found("loading", `llama-server is loading ${next.id}`, true);
  }
  const failed = entries.filter((entry) => entry.failed).length;
  return found(
    "no_model",
    `no model is loaded or sleeping (the router knows ${entries.length}${
      failed > 0 ? `, ${failed} failed to load` : ""
    }): load one in llama-server`,
    true,
  );
}

/** A failed request in words: no connection, or no answer in time. */
function failure(
  error: unknown,
  url: string,
  timeout: AbortSignal,
  timeoutMs: number,
): string {
  if (timeout.aborted) {
    return `no answer from ${url} within ${timeoutMs / 1000} s`;
  }
  // Deno names the reason in the cause: "tcp connect error: Connection refused".
  let text = "";
  for (
    let at: unknown = error, depth = 0;
    at !== undefined && depth < 4;
    at = at instanceof Error ? at.cause : undefined, depth++
  ) {
    text += ` ${at instanceof Error ? at.message : String(at)}`;
  }
  const why = /refused/i.test(text)
    ? "connection refused"
    : /dns|resolve|name or service|not known/i.test(text)
    ? "host not found"
    : /reset|closed|broken pipe|eof/i.test(text)
    ? "connection closed"
    : /timed out/i.test(text)
    ? "connection timed out"
    : /unreachable/i.test(text)
    ? "network unreachable"
    : "connection failed";
  return `no connection to ${url} (${why})`;
}

/** Options of a {@link BackendWatch}. */
export interface BackendWatchOptions {
  url: string;
  /** Config key `model`. */
  model?: string;
  /** `backend_poll` in ms; 0 turns polling off. */
  pollMs: number;
  /** Bound of one probe, in ms; default 5000. */
  timeoutMs?: number;
  /** Sends a changed state to every client. */
  emit: (view: BackendView) => void;
  /** True while a reply is in flight: no poll then. */
  busy: () => boolean;
  fetch?: typeof fetch;
  now?: () => number;
}

const DEFAULT_TIMEOUT_MS = 5000;

/** The daemon's view of llama-server; `LlmClient` tells it of each turn's lookup. */
export class BackendWatch implements LookupObserver, Disposable {
  readonly #options: BackendWatchOptions;
  readonly #now: () => number;
  readonly #closing = new AbortController();
  /** Context sizes the turns measured, per model. */
  readonly #ctx = new Map<string, number>();
  #view: BackendView;
  /** Observations are numbered when they start; an older one never overwrites a newer one. */
  #seq = 0;
  #applied = 0;
  #clients = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #probing: Promise<void> | null = null;
  #again = false;
  #force = false;
  #lastProbe = -Infinity;
  /** Whether llama-server is a router, once a model list or a turn said. */
  #router: boolean | null = null;

  /** Creates the watch in state `unknown`; `probe()` starts it. */
  constructor(options: BackendWatchOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    this.#view = unknownBackend(options.url);
  }

  /** The state as last found. */
  get view(): BackendView {
    return { ...this.#view };
  }

  /** Probes now, whatever the clients and replies; resolves once its result is in. */
  probe(): Promise<void> {
    return this.#request(true);
  }

  /** The number of connected clients changed: polling runs only while there is one. */
  clients(count: number): void {
    const before = this.#clients;
    this.#clients = count;
    if (count === 0) {
      this.#cancelTimer();
      return;
    }
    // A first client after a quiet spell gets a fresh state soon.
    const poll = this.#options.pollMs;
    if (
      before === 0 && poll > 0 && this.#probing === null &&
      this.#now() - this.#lastProbe >= poll
    ) {
      this.#tick();
    } else {
      this.#schedule();
    }
  }

  /** A turn's lookup found its model: the backend is up with it. */
  chosen(choice: ModelChoice): void {
    if (choice.nCtx !== null) this.#ctx.set(choice.id, choice.nCtx);
    this.#router = choice.router;
    this.#apply(++this.#seq, {
      state: "up",
      url: this.#options.url,
      model: choice.id,
      ctx_max: choice.nCtx,
      message: null,
    });
  }

  /** A turn's lookup failed: probe at once to say why (a refused connection is `down` at once). */
  failed(): void {
    this.#request(true).catch(() => {});
  }

  /** Stops polling and abandons a probe in flight. */
  [Symbol.dispose](): void {
    this.#closing.abort();
    this.#cancelTimer();
  }

  #request(force: boolean): Promise<void> {
    if (force) this.#force = true;
    if (this.#probing) {
      this.#again = true;
      return this.#probing;
    }
    this.#probing = this.#run().finally(() => {
      this.#probing = null;
    });
    return this.#probing;
  }

  async #run(): Promise<void> {
    do {
      this.#again = false;
      const force = this.#force;
      this.#force = false;
      await this.#probeOnce(force);
    } while (this.#again && !this.#closing.signal.aborted);
  }

  async #probeOnce(force: boolean): Promise<void> {
    const seq = ++this.#seq;
    const { busy } = this.#options;
    const up = this.#router === false && this.#view.state === "up";
    const found = await probeBackend({
      url: this.#options.url,
      ...(this.#options.model !== undefined
        ? { model: this.#options.model }
        : {}),
      timeoutMs: this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      signal: this.#closing.signal,
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
      knownContext: (model) => this.#ctx.get(model),
      ...(force ? {} : { proceed: () => !busy() }),
      ...(up ? { confirm: this.#view } : {}),
    });
    this.#lastProbe = this.#now();
    if (found === null || this.#closing.signal.aborted) return;
    if (found.router !== null) this.#router = found.router;
    this.#apply(seq, found.view);
  }

  #apply(seq: number, view: BackendView): void {
    if (seq < this.#applied) return;
    this.#applied = seq;
    const old = this.#view;
    if (
      old.state === view.state && old.model === view.model &&
      old.ctx_max === view.ctx_max && old.message === view.message &&
      old.url === view.url
    ) {
      return;
    }
    this.#view = view;
    log.info("backend", {
      state: view.state,
      ...(view.model !== null ? { model: view.model } : {}),
      ...(view.ctx_max !== null ? { n_ctx: view.ctx_max } : {}),
    });
    this.#options.emit({ ...view });
  }

  #schedule(): void {
    const poll = this.#options.pollMs;
    if (
      poll <= 0 || this.#clients === 0 || this.#timer !== null ||
      this.#closing.signal.aborted
    ) {
      return;
    }
    this.#timer = setTimeout(() => this.#tick(), poll);
  }

  #cancelTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #tick(): void {
    this.#timer = null;
    if (this.#clients === 0 || this.#closing.signal.aborted) return;
    // A reply in flight owns the connection to llama-server; its own
    // lookup keeps the state fresh.
    if (this.#options.busy()) {
      this.#schedule();
      return;
    }
    this.#request(false).catch(() => {}).finally(() => this.#schedule());
  }
}
