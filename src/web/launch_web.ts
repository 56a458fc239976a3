/**
 * `deno task web` (`main.ts web-launch`): reads `web_port` from the config,
 * then runs `main.ts web` in a child with exactly the canvas's grants, so
 * the process that serves the browser can read nothing but its own files
 * and the socket, and reach nothing but its own address and the daemon.
 */
import { loadConfig } from "../launch/config.ts";
import {
  denoExecutable,
  MAIN_MODULE,
  runForwarding,
} from "../launch/launch.ts";
import { type Env, readEnv, resolvePaths } from "../launch/paths.ts";
import { AssistantError } from "../errors.ts";
import { writeAll } from "../write_all.ts";
import { parseWebArgs, webFlags } from "./web.ts";

/** The command that runs the canvas with exactly its grants. */
export async function webCommand(
  args: string[],
  env: Env = readEnv,
): Promise<{ command: string; args: string[] }> {
  const given = args.length > 0 ? parseWebArgs(args).port : null;
  const paths = resolvePaths(env);
  const port = given ?? (await loadConfig(paths, env)).config.web_port;
  return {
    command: denoExecutable(),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      ...webFlags({ socketPath: paths.socketPath, port }),
      MAIN_MODULE,
      "web",
      "--port",
      String(port),
    ],
  };
}

/** Runs the canvas in a child and resolves to its exit code; SIGINT and SIGTERM are passed on. */
export async function launchWeb(args: string[]): Promise<number> {
  let command: Awaited<ReturnType<typeof webCommand>>;
  try {
    command = await webCommand(args);
  } catch (error) {
    const known = error instanceof AssistantError ||
      error instanceof SyntaxError || error instanceof TypeError;
    if (!known) throw error;
    await writeAll(Deno.stderr, `${error.message}\n`);
    return error instanceof TypeError && error.message.includes("usage:")
      ? 64
      : 1;
  }
  return await runForwarding(command.command, command.args);
}
