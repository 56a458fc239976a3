/**
 * `main.ts check`: validates the config and the tools, prints the backend
 * state as the daemon would find it, looks up the model the way a turn
 * would, and checks the history database, printing one line per check. It
 * never creates a database and never makes a router load a model.
 */

import { type Config, loadConfig } from "../base/config.ts";
import { type Paths, resolvePaths } from "../base/paths.ts";
import { DatabaseSync } from "node:sqlite";
import { llmLines } from "./check_model.ts";
import { knowledgeLines } from "./check_knowledge.ts";
import {
  type CheckLine,
  type CheckOptions,
  configLines,
  formatLine,
  messageOf,
} from "./check_line.ts";

export {
  type CheckLine,
  type CheckOptions,
  configLines,
  formatLine,
  type Status,
} from "./check_line.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { missingGrants } from "../base/permissions.ts";
import { integrityProblems } from "../store/schema.ts";
import { groupKillHelper } from "../tools/runner.ts";
import { loadTools } from "../tools/load.ts";
import { planMcp } from "../tools/mcp_plan.ts";
import { VERSION } from "../base/version.ts";
import { readCommandLine } from "../base/command_line.ts";

/** Integrity problems listed one by one before the rest are counted. */
const MAX_PROBLEMS = 10;

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
    yield* configLines(error) ??
      [{ status: "fail", subject: "config", message: messageOf(error) }];
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
  if (config !== null) yield* knowledgeLines(paths, config, options);
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
  readCommandLine(args, {
    options: {},
    usage: "usage: main.ts check (it takes no options)",
  });
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
