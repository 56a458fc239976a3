/**
 * One probe of llama-server: `GET /health` and, when it can tell something
 * new, `GET /v1/models`, never a request that loads, wakes or swaps a model.
 * The answer is a backend state with its reason in words.
 */
import type { BackendState, BackendView } from "../protocol/protocol.ts";
import { pick, readEntries } from "./client.ts";

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
