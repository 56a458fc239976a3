/**
 * The daemon's permission flags, derived from its paths, config and tools:
 * `main.ts flags` prints them (what `deno task start` and `assistant.sh`
 * start the daemon with), and `main.ts launch check|compile` runs `deno run`
 * (or `deno compile`) with exactly those.
 */

import { basename, dirname, isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { type Config, loadConfig } from "../base/config.ts";
import {
  type Env,
  type Paths,
  resolvePaths,
  runtimeDirIsSet,
} from "../base/paths.ts";
import { configLines, formatLine } from "./check.ts";
import { AssistantError } from "../base/errors.ts";
import { log, setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { deriveFlags } from "../base/permissions.ts";
import { runnerExecutables } from "../tools/runner.ts";
import { loadTools, type SkippedTool } from "../tools/load.ts";
import { processPath } from "../tools/executable.ts";
import { mcpExecutables } from "../tools/mcp_plan.ts";
import { converterExecutables } from "../tools/convert.ts";
import { LOCKED, printTaskCommand, taskCommand } from "./task_command.ts";
import { readCommandLine, UsageError } from "../base/command_line.ts";

/** The command line's entry point: what the launched process runs. */
export const MAIN_MODULE: string = fileURLToPath(
  new URL("../../main.ts", import.meta.url),
);

/** Where `launch compile` writes the binary unless `--output` says otherwise. */
export const DEFAULT_BINARY: string = join(
  dirname(MAIN_MODULE),
  "dist",
  "desktop-assistant",
);

/** Injected environment of {@link deriveDaemonFlags}. */
export interface DeriveOptions {
  /** Environment variables; default the process environment. */
  env?: Env;
  /** PATH for bare executable names; default the process PATH. */
  pathEnv?: string;
}

/** The daemon's flags and what they were derived from. */
export interface DerivedFlags {
  paths: Paths;
  config: Config;
  /** Config warnings (unknown keys, ignored request fields). */
  warnings: string[];
  /** Resolved executables the daemon may run: the tools', the runner's and the MCP servers'. */
  executables: string[];
  /** Tool files left out, so their executables are not granted. */
  skipped: SkippedTool[];
  flags: string[];
}

/** Throws naming `--allow-read` when this process may not read a directory it must look into. */
function requireRead(dirs: string[]): void {
  const missing = [...new Set(dirs)].filter((dir) =>
    Deno.permissions.querySync({ name: "read", path: dir }).state !==
      "granted"
  );
  if (missing.length > 0) {
    throw new AssistantError(
      `Deriving the flags needs --allow-read=${
        missing.join(",")
      } (the config dir, the tools dirs and the PATH dirs that resolve tool executables): run it through deno task start, or grant --allow-read`,
    );
  }
}

/** Derives the daemon's flags the way `main.ts flags` prints them: every tool's executable counts, whatever this process may run. */
export async function deriveDaemonFlags(
  options: DeriveOptions = {},
): Promise<DerivedFlags> {
  const paths = resolvePaths(options.env);
  requireRead([paths.configDir]);
  const { config, warnings } = await loadConfig(paths, options.env);
  const pathEnv = options.pathEnv ?? options.env?.("PATH") ?? processPath();
  requireRead([
    ...config.tools_dirs,
    ...pathEnv.split(":").filter((dir) => isAbsolute(dir)),
  ]);
  const canRun = () => true;
  const { tools, skipped } = await loadTools(config.tools_dirs, {
    pathEnv,
    canRun,
  });
  const executables = [
    ...tools.map((tool) => tool.executable),
    ...runnerExecutables(config, { pathEnv, canRun }),
    ...mcpExecutables(config, paths.configDir, { pathEnv, canRun }),
    ...converterExecutables(config, paths.configDir, { pathEnv, canRun }),
  ];
  const flags = deriveFlags({ paths, config, executables });
  const broken = flags.find((flag) => /[\n\r]/.test(flag));
  if (broken !== undefined) {
    throw new AssistantError(
      `A path in ${
        JSON.stringify(broken.slice(0, 200))
      } contains a line break, which the flag list cannot carry: rename it`,
    );
  }
  return { paths, config, warnings, executables, skipped, flags };
}

const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** Quotes one word for a POSIX shell (single quotes unless it is plainly safe). */
export function shellQuote(word: string): string {
  if (SAFE_WORD.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

const FLAGS_USAGE = "usage: main.ts flags [--shell|--task]";

/**
 * `main.ts flags [--shell|--task]`: the daemon's flags, one per line, or one
 * shell-quoted line; with `--task` the whole command `deno task start` runs
 * (task_command.ts).
 */
export async function printFlags(args: string[]): Promise<number> {
  const { values } = readCommandLine(args, {
    options: { shell: { type: "boolean" }, task: { type: "boolean" } },
    usage: FLAGS_USAGE,
  });
  if (values.shell && values.task) {
    throw new UsageError(
      `--shell and --task exclude each other: ${FLAGS_USAGE}`,
    );
  }
  setQuiet(true);
  if (values.task) {
    return await printTaskCommand({
      task: "start",
      instead:
        "start the daemon with assistant.sh start (it keeps each flag whole)",
      words: async () => {
        const { paths, flags } = await deriveDaemonFlags();
        return taskCommand(
          ["run", ...LOCKED, "--no-prompt", ...flags, "main.ts", "serve"],
          paths.runtimeDir,
        );
      },
    });
  }
  const { flags } = await deriveDaemonFlags();
  const text = values.shell
    ? flags.map(shellQuote).join(" ") + "\n"
    : flags.map((flag) => flag + "\n").join("");
  await writeAll(Deno.stdout, text);
  return 0;
}

/** The deno to start: this very executable when allowed, else `deno` on PATH (what `--allow-run=deno` grants). */
export function denoExecutable(): string {
  const own = Deno.execPath();
  const may = (command: string) =>
    Deno.permissions.querySync({ name: "run", command }).state === "granted";
  if (may(own)) return own;
  if (may("deno")) return "deno";
  throw new AssistantError(
    `The launcher may not start deno: grant --allow-run=deno (deno task start does) or --allow-run=${own}`,
  );
}

const FORWARDED = ["SIGTERM", "SIGINT"] as const;

/**
 * Runs a command with inherited stdio, forwarding SIGTERM and SIGINT to it;
 * resolves to its exit code. The runtime directory found without
 * XDG_RUNTIME_DIR is handed over in it, so the child need not look again.
 */
async function runForwarding(
  command: string,
  args: string[],
  runtimeDir: string,
): Promise<number> {
  const child = new Deno.Command(command, {
    args,
    ...(runtimeDirIsSet() ? {} : { env: { XDG_RUNTIME_DIR: runtimeDir } }),
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const handlers = FORWARDED.map((signal) => {
    const handler = () => {
      try {
        child.kill(signal);
      } catch {
        // Gone already: its status is on the way.
      }
    };
    Deno.addSignalListener(signal, handler);
    return [signal, handler] as const;
  });
  try {
    const status = await child.status;
    return status.code;
  } finally {
    for (const [signal, handler] of handlers) {
      Deno.removeSignalListener(signal, handler);
    }
  }
}

function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
}

/** The temporary directory a compiled binary mounts its embedded files under. */
function tempDir(): string {
  const granted =
    Deno.permissions.querySync({ name: "env", variable: "TMPDIR" })
      .state === "granted";
  const value = granted ? Deno.env.get("TMPDIR") : undefined;
  return value !== undefined && isAbsolute(value) ? value : "/tmp";
}

/**
 * The flags baked into a compiled binary. Its modules live in a virtual
 * directory, `$TMPDIR/deno-compile-<binary name>/`, so the bundled tools dir
 * it computes is `…/tools` there: that path is granted for reading (the
 * TOML files are embedded with `--include`). An embedded script cannot be
 * executed, so the bundled tools' own scripts are not granted; their copies
 * in the user's tools dir (`assistant.sh install`) are.
 */
export function compiledFlags(
  derived: DerivedFlags,
  output: string,
  tmp: string = tempDir(),
): string[] {
  const { paths, config } = derived;
  const virtualTools = join(tmp, `deno-compile-${basename(output)}`, "tools");
  const bundled = paths.bundledToolsDir;
  return deriveFlags({
    paths: { ...paths, bundledToolsDir: virtualTools },
    config: {
      ...config,
      tools_dirs: config.tools_dirs.map((dir) =>
        dir === bundled ? virtualTools : dir
      ),
    },
    executables: derived.executables.filter((exe) => !isInside(exe, bundled)),
  });
}

const COMPILE_USAGE = "usage: main.ts launch compile [--output PATH]";

async function compile(args: string[]): Promise<number> {
  const { values } = readCommandLine(args, {
    options: { output: { type: "string" } },
    usage: COMPILE_USAGE,
    needs: { output: "a path" },
  });
  if (values.output === "") {
    throw new UsageError(`--output needs a path: ${COMPILE_USAGE}`);
  }
  const given = values.output;
  const output = given === undefined
    ? DEFAULT_BINARY
    : isAbsolute(given)
    ? given
    : join(Deno.cwd(), given);
  const derived = await deriveDaemonFlags();
  const flags = compiledFlags(derived, output);
  log.info("compiling", { output, flags: flags.length });
  return await runForwarding(
    denoExecutable(),
    [
      "compile",
      ...LOCKED,
      "--no-prompt",
      ...flags,
      "--include",
      derived.paths.bundledToolsDir,
      "--output",
      output,
      MAIN_MODULE,
    ],
    derived.paths.runtimeDir,
  );
}

/**
 * `main.ts launch check|compile`: derives the flags and runs that command
 * with exactly them; resolves to its exit code. The daemon itself starts
 * without a launcher (`deno task start` runs the line `main.ts flags --task`
 * prints), so nothing stays resident beside it.
 */
export async function launch(args: string[]): Promise<number> {
  // The first word names the command; the rest is that command's to parse.
  const [command = "", ...rest] = args;
  switch (command) {
    case "check": {
      let derived: DerivedFlags;
      try {
        derived = await deriveDaemonFlags();
      } catch (error) {
        // The check's own report format, so a broken config reads the same.
        const lines = configLines(error) ?? [{
          status: "fail",
          subject: error instanceof SyntaxError || error instanceof TypeError
            ? "config"
            : "launch",
          message: error instanceof Error ? error.message : String(error),
        }];
        await writeAll(
          Deno.stdout,
          lines.map((line) => formatLine(line) + "\n").join(""),
        );
        return 1;
      }
      log.info("launching", { command, flags: derived.flags.length });
      return await runForwarding(
        denoExecutable(),
        [
          "run",
          ...LOCKED,
          "--no-prompt",
          ...derived.flags,
          MAIN_MODULE,
          command,
          ...rest,
        ],
        derived.paths.runtimeDir,
      );
    }
    case "compile":
      return await compile(rest);
    default:
      throw new UsageError(
        `Unknown launch command ${
          JSON.stringify(command)
        }: use check or compile (deno task start runs the daemon)`,
      );
  }
}
