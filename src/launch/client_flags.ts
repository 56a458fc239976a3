/**
 * `main.ts client-flags [--task] chat|ask`: a terminal client's grants (the
 * socket alone). `deno task chat` and `deno task ask` run the line `--task`
 * prints (task_command.ts): `deno run --quiet --no-prompt`, the grants,
 * `main.ts chat`, then whatever the task was given. The launcher exits before
 * the client starts, so only `deno task` stays beside it.
 */
import { dirname } from "node:path";
import { type Env, readEnv, socketPath } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { clientFlags } from "../clients/client.ts";
import { LOCKED, printTaskCommand, taskCommand } from "./task_command.ts";
import { readCommandLine, UsageError } from "../base/command_line.ts";

const USAGE = "usage: main.ts client-flags [--task] chat|ask";

/** The clients a task starts this way. */
const CLIENTS = new Set(["chat", "ask"]);

/** The socket's runtime directory and a client's flags for it. */
export function clientGrants(
  env: Env = readEnv,
): { runtimeDir: string; flags: string[] } {
  const socket = socketPath(env);
  return { runtimeDir: dirname(socket), flags: clientFlags(socket) };
}

/** `main.ts client-flags [--task] chat|ask`: the flags, or with `--task` the client's whole command; resolves to the exit code. */
export async function printClientFlags(args: string[]): Promise<number> {
  const { values, positionals } = readCommandLine(args, {
    options: { task: { type: "boolean" } },
    usage: USAGE,
    positionals: true,
  });
  const [client, ...more] = positionals;
  if (client === undefined || !CLIENTS.has(client) || more.length > 0) {
    throw new UsageError(
      `${
        client === undefined
          ? "Name the client"
          : `Unknown client ${JSON.stringify(positionals.join(" "))}`
      }: ${USAGE}`,
    );
  }
  setQuiet(true);
  if (values.task) {
    return await printTaskCommand({
      task: client,
      instead:
        `run main.ts ${client} with the flags main.ts client-flags ${client} prints`,
      words: () => {
        const grants = clientGrants();
        return taskCommand(
          [
            "run",
            ...LOCKED,
            "--quiet",
            "--no-prompt",
            ...grants.flags,
            "main.ts",
            client,
          ],
          grants.runtimeDir,
        );
      },
    });
  }
  let flags: string[];
  try {
    ({ flags } = clientGrants());
  } catch (error) {
    if (!(error instanceof AssistantError)) throw error;
    await writeAll(Deno.stderr, `${error.message}\n`);
    return 1;
  }
  await writeAll(Deno.stdout, flags.map((flag) => `${flag}\n`).join(""));
  return 0;
}
