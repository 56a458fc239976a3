/**
 * Running one tool call: arguments checked against the tool's schema, argv
 * built without a shell, the arguments object on stdin, stdout and stderr
 * read as bounded streams, and the time limit enforced.
 *
 * Under a scoped `--allow-run`, Deno can signal only the process it started:
 * `Deno.kill` of any pid or group needs an unscoped grant. So by default a
 * timed-out tool's own process is killed, and what it started is ended only
 * by the pipes: once the tool is gone its stdout and stderr are read for a
 * short grace and then closed, so a child that writes dies of SIGPIPE and one
 * that holds the pipe cannot hold the call. A child that neither writes nor
 * exits lives on (measured in tests/tool_runner_test.ts). With
 * `tool_group_kill` the tool runs under coreutils `timeout -s KILL`, which
 * leads its own process group and kills all of it, at the price of a grant
 * for `timeout`.
 */

import { dirname } from "node:path";
import type { HeadCollector, TailCollector } from "./bounded_output.ts";
import { boundedRun, STDERR_TAIL } from "./bounded_run.ts";
import { log } from "../base/log.ts";
import { brief, checkArguments, substitute } from "./args.ts";
import {
  canRunExecutable,
  processPath,
  resolveExecutable,
} from "./executable.ts";
import type { ToolDef } from "./load.ts";

/** What one call produced, as the model and the history see it. */
export interface ToolOutcome {
  /** Exactly what the model reads as the tool message content. */
  content: string;
  /** Bytes of stdout produced (before cutting). */
  bytes: number;
  /** Lines of stdout produced. */
  lines: number;
  durationMs: number;
  /** "exit 0", "exit 3", "signal SIGSEGV", "timeout", "stopped", "invalid arguments", "unknown tool", "failed to start". */
  status: string;
}

/** Limits of one call. */
export interface RunOptions {
  /** Bytes of stdout given to the model. */
  outputLimit: number;
  /** Seconds, for tools whose file sets no `timeout`. */
  defaultTimeout: number;
  /** Daemon shutdown: kills the tool. A user's `stop` does not use it. */
  signal?: AbortSignal;
  /** Path of coreutils `timeout` to kill the whole process group; absent or null runs the tool directly. */
  timeoutHelper?: string | null;
  /** Every tool's name, for the model's note on an unknown one; default the names in `tools`. */
  known?: readonly string[];
}

const encoder = new TextEncoder();

/** Where to find coreutils `timeout`, and whether a path may be run. */
export interface HelperOptions {
  pathEnv?: string;
  canRun?: (executable: string) => boolean;
}

/** The resolved path of coreutils `timeout` on PATH, or null when there is none. */
export function groupKillHelper(options: HelperOptions = {}): string | null {
  return resolveExecutable(
    "timeout",
    "/",
    options.pathEnv ?? processPath(),
    options.canRun ?? canRunExecutable,
  );
}

/** Resolved helper paths the runner needs for this config: `--allow-run` must include them. */
export function runnerExecutables(
  config: { tool_group_kill: boolean },
  options: HelperOptions = {},
): string[] {
  if (!config.tool_group_kill) return [];
  const path = groupKillHelper(options);
  return path === null ? [] : [path];
}

function formatSeconds(seconds: number): string {
  return `${Number(seconds.toFixed(3))}`;
}

function failureContent(
  headline: string,
  stdout: HeadCollector,
  stderr: TailCollector,
): string {
  let content = headline;
  if (stderr.bytes > 0) {
    const label = stderr.bytes > STDERR_TAIL
      ? `stderr (last ${STDERR_TAIL} bytes)`
      : "stderr";
    content += `\n${label}:\n${stderr.text()}`;
  }
  if (stdout.bytes > 0) content += `\nstdout:\n${stdout.text()}`;
  return content;
}

async function execute(
  tool: ToolDef,
  args: Record<string, unknown>,
  options: RunOptions,
  started: number,
): Promise<Omit<ToolOutcome, "durationMs">> {
  const seconds = tool.timeout ?? options.defaultTimeout;
  const argv = tool.command.slice(1).map((element) =>
    substitute(element, args, tool.parameters)
  );
  const helper = options.timeoutHelper ?? null;
  const { status, reason, stdout, stderr } = await boundedRun({
    executable: tool.executable,
    args: argv,
    cwd: dirname(tool.file),
    stdin: encoder.encode(JSON.stringify(args)),
    seconds,
    outputLimit: options.outputLimit,
    ...(options.signal ? { signal: options.signal } : {}),
    helper,
  });
  const measured = { bytes: stdout.bytes, lines: stdout.lines };
  const elapsed = performance.now() - started;
  if (
    reason === "timeout" ||
    (reason === null && helper !== null && status.signal === "SIGKILL" &&
      elapsed >= seconds * 1000)
  ) {
    let content =
      `The tool ${tool.name} was stopped after ${formatSeconds(seconds)} ` +
      `seconds, its time limit, and gave no complete result.`;
    if (stdout.bytes > 0) {
      content += `\nOutput before it was stopped:\n${stdout.text()}`;
    }
    return { ...measured, content, status: "timeout" };
  }
  if (reason === "stopped") {
    return {
      ...measured,
      content:
        `The tool ${tool.name} was stopped: the assistant is shutting down.`,
      status: "stopped",
    };
  }
  if (status.signal !== null) {
    return {
      ...measured,
      content: failureContent(
        `The tool ${tool.name} was ended by signal ${status.signal}.`,
        stdout,
        stderr,
      ),
      status: `signal ${status.signal}`,
    };
  }
  if (helper !== null && (status.code === 126 || status.code === 127)) {
    // The helper could not exec the tool: the tool never started.
    const line = stderr.text().match(
      /^(?:\S*\/)?timeout: (failed to run command .*)$/m,
    );
    if (line) {
      return {
        ...measured,
        content: `The tool ${tool.name} failed to start: ${line[1]}`,
        status: "failed to start",
      };
    }
  }
  if (status.code !== 0) {
    return {
      ...measured,
      content: failureContent(
        `The tool ${tool.name} failed with exit status ${status.code}.`,
        stdout,
        stderr,
      ),
      status: `exit ${status.code}`,
    };
  }
  const content = stdout.bytes === 0 ? "[no output]" : stdout.text();
  return { ...measured, content, status: "exit 0" };
}

/** Validates args against the schema, runs the tool without a shell, bounds output and time. Never throws. */
export async function runTool(
  tools: ReadonlyMap<string, ToolDef>,
  name: string,
  argsJson: string,
  options: RunOptions,
): Promise<ToolOutcome> {
  const started = performance.now();
  const finish = (result: Omit<ToolOutcome, "durationMs">): ToolOutcome => {
    const outcome = {
      ...result,
      durationMs: Math.round(performance.now() - started),
    };
    log.info("tool call", {
      tool: tools.has(name) ? name : undefined,
      status: outcome.status,
      bytes: outcome.bytes,
      lines: outcome.lines,
      ms: outcome.durationMs,
    });
    return outcome;
  };
  const none = { bytes: 0, lines: 0 };
  const tool = tools.get(name);
  if (!tool) {
    const available =
      [...options.known ?? [...tools.keys()].sort()].join(", ") || "none";
    return finish({
      ...none,
      content: `Unknown tool ${brief(name)}. Available tools: ${available}.`,
      status: "unknown tool",
    });
  }
  const checked = checkArguments(tool, argsJson);
  if ("problem" in checked) {
    return finish({
      ...none,
      content: checked.problem,
      status: "invalid arguments",
    });
  }
  if (options.signal?.aborted) {
    return finish({
      ...none,
      content:
        `The tool ${tool.name} was not run: the assistant is shutting down.`,
      status: "stopped",
    });
  }
  try {
    return finish(await execute(tool, checked.args, options, started));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return finish({
      ...none,
      content: `The tool ${tool.name} failed to start: ${message}`,
      status: "failed to start",
    });
  }
}

/** The stored stand-in for a tool result: its measurements, not its content. */
export function placeholder(name: string, outcome: ToolOutcome): string {
  const plural = (n: number, unit: string) =>
    `${n} ${unit}${n === 1 ? "" : "s"}`;
  const seconds = (outcome.durationMs / 1000).toFixed(1);
  return `[tool result not kept: ${name}, ${plural(outcome.bytes, "byte")}, ` +
    `${plural(outcome.lines, "line")}, ${seconds} s, ${outcome.status}]`;
}
