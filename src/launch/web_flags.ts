/**
 * `main.ts web-flags [--task] [--port N]`: the canvas's grants for
 * `web_port` from the config (or `--port`). `deno task web` runs the line
 * `--task` prints (task_command.ts): `deno run` locked to deno.lock, `--quiet --no-prompt`, the
 * flags, this module's `main.ts`, `web --port N`, so the canvas is started
 * with exactly its grants and nothing stays resident beside `deno task`.
 */
import { loadConfig } from "../base/config.ts";
import { MAIN_MODULE } from "./launch.ts";
import { type Env, type Paths, readEnv, resolvePaths } from "../base/paths.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { parseWebArgs, webFlags } from "../web/web.ts";
import {
  failureText,
  LOCKED,
  printTaskCommand,
  taskCommand,
} from "./task_command.ts";
import { readCommandLine, UsageError } from "../base/command_line.ts";

const USAGE = "usage: main.ts web-flags [--task] [--port N]";

/** The canvas's flags and the port they grant: `port` when given, else the config's `web_port`. */
export async function webGrants(
  port: number | null,
  env: Env = readEnv,
): Promise<{ paths: Paths; port: number; flags: string[] }> {
  const paths = resolvePaths(env);
  const chosen = port ?? (await loadConfig(paths, env)).config.web_port;
  return {
    paths,
    port: chosen,
    flags: webFlags({ socketPath: paths.socketPath, port: chosen }),
  };
}

/** The canvas's own part of the command: `main.ts web --port N`. */
function canvasWords(port: number): string[] {
  return [MAIN_MODULE, "web", "--port", String(port)];
}

/** The words after `deno run --quiet --no-prompt` that start the canvas: its flags, then `main.ts web --port N`. */
export async function webCommandWords(
  args: string[] = [],
  env: Env = readEnv,
): Promise<string[]> {
  const given = args.length > 0 ? parseWebArgs(args).port : null;
  const grants = await webGrants(given, env);
  return [...grants.flags, ...canvasWords(grants.port)];
}

/** The port `--port` names, checked as `main.ts web` checks it. */
function portOf(text: string | undefined): number | null {
  if (text === undefined) return null;
  try {
    return parseWebArgs(["--port", text]).port;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    throw new UsageError(error.message.replace(/usage: .*$/, USAGE));
  }
}

/** `main.ts web-flags [--task] [--port N]`: the canvas's flags, or with `--task` its whole command; resolves to the exit code. */
export async function printWebFlags(args: string[]): Promise<number> {
  const { values } = readCommandLine(args, {
    options: { task: { type: "boolean" }, port: { type: "string" } },
    usage: USAGE,
    needs: { port: "a port number from 0 to 65535" },
  });
  const port = portOf(values.port);
  setQuiet(true);
  if (values.task) {
    return await printTaskCommand({
      task: "web",
      instead: "run main.ts web with the flags main.ts web-flags prints",
      words: async () => {
        const grants = await webGrants(port);
        return taskCommand(
          [
            "run",
            ...LOCKED,
            "--quiet",
            "--no-prompt",
            ...grants.flags,
            ...canvasWords(grants.port),
          ],
          grants.paths.runtimeDir,
        );
      },
    });
  }
  let flags: string[];
  try {
    ({ flags } = await webGrants(port));
  } catch (error) {
    const reason = failureText(error);
    if (reason === null) throw error;
    await writeAll(Deno.stderr, reason);
    return 1;
  }
  await writeAll(Deno.stdout, flags.map((flag) => `${flag}\n`).join(""));
  return 0;
}
