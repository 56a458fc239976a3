/**
 * `main.ts check`: validates the config and the tools, prints the backend
 * state as the daemon would find it, looks up the model the way a turn
 * would, and checks the history database, printing one line per check. It
 * never creates a database and never makes a router load a model.
 */

import { type Config, loadConfig } from "../base/config.ts";
import { type Env, type Paths, resolvePaths } from "../base/paths.ts";
import { DatabaseSync } from "node:sqlite";
import { probeBackend } from "../llm/backend_probe.ts";
import { LlmClient } from "../llm/client.ts";
import { replyReserve, wantedReserve } from "../assistant/budget.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { missingGrants } from "../base/permissions.ts";
import { integrityProblems } from "../store/schema.ts";
import { groupKillHelper } from "../tools/runner.ts";
import { loadTools } from "../tools/load.ts";
import { planMcp } from "../tools/mcp_plan.ts";
import { VERSION } from "../base/version.ts";
import { parseCommandLine } from "./usage.ts";

/** How one check came out. */
export type Status = "ok" | "warn" | "fail";

/** One line of the report. */
export interface CheckLine {
  status: Status;
  /** What was checked, e.g. `config`, `llama-server`. */
  subject: string;
  message: string;
}

/** Injected parts of the check; the real ones by default. */
export interface CheckOptions {
  env?: Env;
  fetch?: typeof fetch;
  /** Bound of each request to llama-server, in ms; default 10 000. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** Integrity problems listed one by one before the rest are counted. */
const MAX_PROBLEMS = 10;

/** Formats a line as printed: status padded, subject, message. */
export function formatLine(line: CheckLine): string {
  return `${line.status.padEnd(4)} ${line.subject}: ${line.message}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs every check in order, yielding each line as soon as it is known. */
export async function* checks(
  options: CheckOptions = {},
): AsyncGenerator<CheckLine> {
  let paths: Paths;
  try {
    paths = resolvePaths(options.env);
  } catch (error) {
    yield { status: "fail", subject: "paths", message: messageOf(error) };
    return;
  }
  let config: Config | null = null;
  try {
    const loaded = await loadConfig(paths, options.env);
    config = loaded.config;
    yield {
      status: "ok",
      subject: "config",
      message: loaded.file ??
        `no file at ${paths.configFile}: the built-in defaults apply`,
    };
    for (const warning of loaded.warnings) {
      yield { status: "warn", subject: "config", message: warning };
    }
  } catch (error) {
    yield { status: "fail", subject: "config", message: messageOf(error) };
  }
  if (config !== null) {
    yield grantsLine(paths, config);
    // Every tool name found, for the check of confirm_tools.
    const offered = new Set<string>();
    yield* toolLines(config, offered);
    yield* mcpLines(paths, config, offered);
    const unknown = config.confirm_tools.filter((name) => !offered.has(name));
    if (unknown.length > 0) {
      yield {
        status: "warn",
        subject: "confirm_tools",
        message: `${
          unknown.join(", ")
        } matches no tool file or MCP tool: a misspelt name there would let that tool run without asking`,
      };
    }
    yield* llmLines(paths, config, options);
  }
  yield* historyLines(paths);
}

function grantsLine(paths: Paths, config: Config): CheckLine {
  const missing = [
    ...missingGrants({ paths, config }),
    ...planMcp(config, paths.configDir).missing,
  ];
  if (config.tool_group_kill && groupKillHelper() === null) {
    missing.push(
      "--allow-run=<path of coreutils timeout> (for tool_group_kill)",
    );
  }
  if (missing.length === 0) {
    return {
      status: "ok",
      subject: "permissions",
      message: "this process has every grant the config needs",
    };
  }
  return {
    status: "fail",
    subject: "permissions",
    message: `started without ${
      missing.join(" ")
    }: run with the flags from \`main.ts flags\` (deno task check does)`,
  };
}

async function* toolLines(
  config: Config,
  offered: Set<string>,
): AsyncGenerator<CheckLine> {
  const { tools, skipped } = await loadTools(config.tools_dirs);
  for (const tool of tools) offered.add(tool.name);
  const names = tools.map((tool) => tool.name).join(", ");
  yield {
    status: "ok",
    subject: "tools",
    message: tools.length === 0
      ? `none loaded from ${config.tools_dirs.join(", ") || "no dirs"}`
      : `${tools.length} loaded (${names})`,
  };
  for (const { file, reason } of skipped) {
    yield {
      status: "warn",
      subject: "tool",
      message: `${file} is left out: ${reason}`,
    };
  }
}

/** Starts each MCP server once (no restarts), lists its tools, and ends it. */
async function* mcpLines(
  paths: Paths,
  config: Config,
  offered: Set<string>,
): AsyncGenerator<CheckLine> {
  const plan = planMcp(config, paths.configDir);
  for (const { name, reason } of plan.leftOut) {
    yield {
      status: "fail",
      subject: `mcp ${name}`,
      message: `left out: ${reason}`,
    };
  }
  if (plan.servers.length === 0) return;
  // Loaded only here: the launcher, which shares this module, never needs the SDK.
  const { describeStatus, McpHub } = await import("../tools/mcp.ts");
  await using hub = new McpHub(plan.servers, {
    defaultTimeout: config.tool_timeout,
    outputLimit: config.tool_output_limit,
    version: VERSION,
    cwd: paths.configDir,
    restart: false,
  });
  await hub.start();
  for (const tool of hub.tools()) offered.add(tool.name);
  for (const server of hub.servers) {
    yield {
      status: server.status.state === "ready" ? "ok" : "fail",
      subject: `mcp ${server.name}`,
      message: describeStatus(server),
    };
  }
}

async function* llmLines(
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
      message: message === "no model loaded"
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
      `not learnt yet for this model: the daemon learns it from the first request after the history window moves${compact}`,
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

async function* historyLines(paths: Paths): AsyncGenerator<CheckLine> {
  const path = paths.dbPath;
  try {
    await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      yield {
        status: "ok",
        subject: "history",
        message:
          `no database yet at ${path}: the daemon creates it at its first start`,
      };
    } else {
      yield {
        status: "fail",
        subject: "history",
        message: `cannot inspect ${path}: ${messageOf(error)}`,
      };
    }
    return;
  }
  let problems: string[];
  // Only the daemon writes the history: while one answers, the check reads
  // (FTS5's own check takes the write lock and would hold up a reply's save).
  const live = await daemonAnswers(paths.socketPath);
  try {
    const db = new DatabaseSync(path, { readOnly: live });
    try {
      problems = integrityProblems(db, { fullText: !live });
    } finally {
      db.close();
    }
  } catch (error) {
    const cause = error instanceof Error && error.cause !== undefined
      ? ` (${messageOf(error.cause)})`
      : "";
    yield {
      status: "fail",
      subject: "history",
      message: `${messageOf(error)}${cause}`,
    };
    return;
  }
  if (problems.length === 0) {
    yield {
      status: "ok",
      subject: "history",
      message: live
        ? `${path} passes SQLite's integrity checks (the full-text index is checked only while the daemon is stopped)`
        : `${path} passes SQLite's and the full-text index's integrity checks`,
    };
    return;
  }
  for (const problem of problems.slice(0, MAX_PROBLEMS)) {
    yield {
      status: "fail",
      subject: "history",
      message: `${path}: ${problem}`,
    };
  }
  if (problems.length > MAX_PROBLEMS) {
    yield {
      status: "fail",
      subject: "history",
      message: `${path}: and ${problems.length - MAX_PROBLEMS} more problems`,
    };
  }
  yield {
    status: "fail",
    subject: "history",
    message:
      `stop the daemon and restore ${path} from a backup, or move it aside (with its -wal and -shm) to start afresh`,
  };
}

function print(line: string): Promise<void> {
  return writeAll(Deno.stdout, line + "\n");
}

/** `main.ts check`: prints one line per check; 0 when none failed, 1 otherwise. */
export async function runCheck(args: string[]): Promise<number> {
  parseCommandLine(
    { args, options: {} },
    "usage: main.ts check (it takes no options)",
  );
  setQuiet(true);
  let failed = false;
  for await (const line of checks()) {
    if (line.status === "fail") failed = true;
    await print(formatLine(line));
  }
  return failed ? 1 : 0;
}

async function daemonAnswers(socket: string): Promise<boolean> {
  try {
    const conn = await Deno.connect({ transport: "unix", path: socket });
    conn.close();
    return true;
  } catch {
    return false;
  }
}
