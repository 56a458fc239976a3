/**
 * What llama-server can do right now, known before anyone asks. The watch
 * probes (`backend_probe.ts`) at start, every `backend_poll` seconds while a
 * client is connected and no reply is in flight, and after a turn's model
 * lookup fails; a lookup that succeeds is itself the news. Clients hear of
 * the state only when something in it changes.
 */
import type { BackendView } from "../protocol/protocol.ts";
import { log } from "../base/log.ts";
import type { LookupObserver, ModelChoice } from "./client.ts";
import { probeBackend, unknownBackend } from "./backend_probe.ts";

/** What the polls wait on: the real timers by default; a test's own lets it drive time. */
export interface PollTimer {
  /** Runs `run` once, `ms` from now; the handle cancels it. */
  set(run: () => void, ms: number): unknown;
  /** Cancels a run not yet made. */
  cancel(handle: unknown): void;
}

/** The runtime's own timers. */
export const REAL_TIMER: PollTimer = {
  set: (run, ms) => setTimeout(run, ms),
  cancel: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

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
  /** Milliseconds on the clock `timer` runs by; default `performance.now`. */
  now?: () => number;
  /** Waits between polls; default the real timers. */
  timer?: PollTimer;
}

const DEFAULT_TIMEOUT_MS = 5000;

/** The daemon's view of llama-server; `LlmClient` tells it of each turn's lookup. */
export class BackendWatch implements LookupObserver, Disposable {
  readonly #options: BackendWatchOptions;
  readonly #now: () => number;
  readonly #timers: PollTimer;
  readonly #closing = new AbortController();
  /** Context sizes the turns measured, per model. */
  readonly #ctx = new Map<string, number>();
  #view: BackendView;
  /** Observations are numbered when they start; an older one never overwrites a newer one. */
  #seq = 0;
  #applied = 0;
  #clients = 0;
  #timer: unknown = null;
  #probing: Promise<void> | null = null;
  #again = false;
  #force = false;
  #lastProbe = -Infinity;
  /** Whether llama-server is a router, once a model list or a turn said. */
  #router: boolean | null = null;
  /** Told when llama-server is found not up. */
  readonly #lost: (() => void)[] = [];

  /** Creates the watch in state `unknown`; `probe()` starts it. */
  constructor(options: BackendWatchOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    this.#timers = options.timer ?? REAL_TIMER;
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

  /**
   * Calls `listener` whenever llama-server is found not up (down, loading,
   * no model): what was learnt of its models (context size, vision) may
   * not hold when it is back, with other flags under the same model id.
   */
  onLost(listener: () => void): void {
    this.#lost.push(listener);
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
    if (view.state !== "up") {
      this.#ctx.clear();
      for (const listener of this.#lost) listener();
    }
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
    this.#timer = this.#timers.set(() => this.#tick(), poll);
  }

  #cancelTimer(): void {
    if (this.#timer !== null) this.#timers.cancel(this.#timer);
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
