/**
 * `check`'s lines about llama-server: the backend state as the daemon would
 * find it, the model a turn would use with its context and the reply's
 * reserve, and what the daemon learnt of that model's prompt cache.
 */
import { DatabaseSync } from "node:sqlite";
import type { Config } from "../base/config.ts";
import type { Paths } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { replyReserve, wantedReserve } from "../assistant/reserve.ts";
import { probeBackend } from "../llm/backend_probe.ts";
import { LlmClient } from "../llm/client.ts";
import {
  type CheckLine,
  type CheckOptions,
  DEFAULT_TIMEOUT_MS,
  messageOf,
} from "./check_line.ts";

/** The backend, model and prompt-cache lines. */
export async function* llmLines(
  paths: Paths,
  config: Config,
  options: CheckOptions,
): AsyncGenerator<CheckLine> {
  const url = config.llm_url;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const fetcher = options.fetch ?? globalThis.fetch;
  // The probe the daemon makes, so check prints the state clients would see.
  const { view: backend } = await probeBackend({
    url,
    model: config.model,
    timeoutMs,
    fetch: fetcher,
  });
  if (backend.state === "down") {
    yield {
      status: "fail",
      subject: "backend",
      message:
        `down: ${backend.message}: start llama-server there, or set llm_url in the config`,
    };
    return;
  }
  yield {
    status: backend.state === "up" ? "ok" : "warn",
    subject: "backend",
    message: `${backend.state} at ${url}${
      backend.message === null ? "" : `: ${backend.message}`
    }`,
  };
  const client = new LlmClient({
    url,
    model: config.model,
    stallMs: timeoutMs,
    fetch: fetcher,
  });
  try {
    const choice = await client.chooseModel(AbortSignal.timeout(timeoutMs));
    const kind = choice.router ? "router, loaded model" : "single model";
    if (choice.nCtx === null) {
      yield {
        status: "warn",
        subject: "model",
        message:
          `${choice.id} (${kind}); its context size is unknown: neither /props nor /v1/models reports n_ctx`,
      };
    } else {
      yield {
        status: "ok",
        subject: "model",
        message: `${choice.id} (${kind}), context ${choice.nCtx} tokens, ${
          reserveText(choice.nCtx, config)
        }`,
      };
    }
    yield cacheLine(paths, config, choice.id);
  } catch (error) {
    const message = messageOf(error);
    yield {
      status: "fail",
      subject: "model",
      message: error instanceof AssistantError &&
          error.code === "no_model_loaded"
        ? `no model loaded at ${url}: load one in llama-server (the daemon never loads or swaps a model itself)`
        : `${message} (${url}/v1/models)`,
    };
  }
}

/** What the daemon learnt of the model's prompt cache, from the history file, and what it makes of the window. */
function cacheLine(paths: Paths, config: Config, model: string): CheckLine {
  const line = (message: string): CheckLine => ({
    status: "ok",
    subject: "prompt cache",
    message,
  });
  const reuse = config.request.n_cache_reuse ?? config.cache_reuse;
  if (typeof reuse === "number" && reuse <= 0) {
    return line(
      "n_cache_reuse is off (cache_reuse = 0): the history window moves in blocks, so the server reads the kept turns again once a block",
    );
  }
  let shifts: boolean | null = null;
  try {
    const db = new DatabaseSync(paths.dbPath, { readOnly: true });
    try {
      const row = db.prepare("SELECT shifts FROM model_cache WHERE model = ?")
        .get(model);
      shifts = row === undefined ? null : Number(row.shifts) === 1;
    } finally {
      db.close();
    }
  } catch {
    // No history yet, or one from before findings were kept.
  }
  const compact = config.compact
    ? "; with compact on it moves in blocks, one summary a block"
    : "";
  if (shifts === null) {
    return line(
      `not learnt yet for this model: the daemon learns it from the first requests after the history window moves${compact}`,
    );
  }
  return line(
    shifts
      ? `llama-server shifts this model's cache (n_cache_reuse works): the history window may slide a turn at a time${compact}`
      : "llama-server cannot shift this model's cache (a sliding-window, recurrent or hybrid model): the history window moves in blocks of half of history_turns",
  );
}

/** The reply's reserve and where it comes from, as `check` prints it. */
function reserveText(nCtx: number, config: Config): string {
  const wanted = wantedReserve(config);
  const reserve = replyReserve(nCtx, config);
  const source = wanted.from === "reply_reserve"
    ? "reply_reserve"
    : `${wanted.from} in [request]`;
  const capped = reserve < wanted.tokens ? ", capped at half the context" : "";
  return `${reserve} kept for the reply (${source}${capped})`;
}
