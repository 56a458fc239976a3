/**
 * `main.ts web-flags [--task]`: the canvas's grants for `web_port` from the
 * config. `deno task web` runs `deno run … $(main.ts web-flags --task)`, so
 * the canvas is started with exactly its grants and nothing stays resident
 * beside `deno task`: `--task` prints the whole rest of that command line
 * (the flags, this module's `main.ts`, `web --port N`), one word per line.
 */
import { loadConfig } from "../base/config.ts";
import { MAIN_MODULE, taskWords } from "./launch.ts";
import { type Env, readEnv, resolvePaths } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { parseWebArgs, webFlags } from "../web/web.ts";

/** The words after `deno run --quiet --no-prompt` that start the canvas: its flags, then `main.ts web --port N`. */
export async function webCommandWords(
  args: string[] = [],
  env: Env = readEnv,
): Promise<string[]> {
  const given = args.length > 0 ? parseWebArgs(args).port : null;
  const paths = resolvePaths(env);
  const port = given ?? (await loadConfig(paths, env)).config.web_port;
  return [
    ...webFlags({ socketPath: paths.socketPath, port }),
    MAIN_MODULE,
    "web",
    "--port",
    String(port),
  ];
}

/** `main.ts web-flags [--task] [--port N]`: the canvas's flags, or with `--task` its whole command; resolves to the exit code. */
export async function printWebFlags(args: string[]): Promise<number> {
  const task = args.includes("--task");
  const rest = args.filter((arg) => arg !== "--task");
  setQuiet(true);
  try {
    const words = await webCommandWords(rest);
    const shown = task ? taskWords(words) : words.slice(0, -4);
    await writeAll(Deno.stdout, shown.map((word) => word + "\n").join(""));
    return 0;
  } catch (error) {
    const known = error instanceof AssistantError ||
      error instanceof SyntaxError || error instanceof TypeError;
    if (!known) throw error;
    await writeAll(Deno.stderr, `${error.message}\n`);
    // A failed substitution leaves `deno run` without a script: say why there.
    return error instanceof TypeError && error.message.includes("usage:")
      ? 64
      : 1;
  }
}
