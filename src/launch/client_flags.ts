/**
 * `main.ts client-flags [--task] chat|ask|export`: a terminal client's
 * grants. All three reach the socket; `chat` and `ask` also read any file
 * the user names (`/attach`, `--file`) with the user's own rights, and chat
 * writes its input history and its exports, each in a folder of its own.
 * `deno task chat|ask|export` run the line `--task` prints
 * (task_command.ts): `deno run --quiet --no-prompt`, the grants, `main.ts
 * <client>`, then whatever the task was given. The launcher exits before
 * the client starts, so only `deno task` stays beside it.
 */
import { dirname } from "node:path";
import { type Env, readEnv, socketPath } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { clientFlags } from "../clients/client.ts";
import {
  ASK_ENV_VARS,
  CHAT_ENV_VARS,
  chatPlaces,
} from "../clients/chat_places.ts";
import { LOCKED, printTaskCommand, taskCommand } from "./task_command.ts";
import { readCommandLine, UsageError } from "../base/command_line.ts";

const USAGE = "usage: main.ts client-flags [--task] chat|ask|export";

/** The clients a task starts this way. */
export type TerminalClient = "chat" | "ask" | "export";

const CLIENTS: ReadonlySet<string> = new Set(["chat", "ask", "export"]);

/** Whether a path can stand in a permission list and in a task's words: no comma, no whitespace. */
function grantable(path: string): boolean {
  return !/[,\s]/.test(path);
}

/** A client's flags for the socket at `socket`: the socket, and for chat and ask an unscoped read (the files the user names) and chat's own folders. */
export function terminalClientFlags(
  client: TerminalClient,
  socket: string,
  env: Env = readEnv,
): string[] {
  const flags = clientFlags(socket);
  if (client === "export") return flags;
  const writes = [socket];
  if (client === "chat") {
    const { historyDir, exportDir } = chatPlaces(env);
    for (const dir of [historyDir, exportDir]) {
      // A folder a flag cannot name is left out: chat then keeps its
      // history in memory and says an export needs a grant.
      if (dir !== null && grantable(dir)) writes.push(dir);
    }
  }
  const vars = client === "chat" ? CHAT_ENV_VARS : ASK_ENV_VARS;
  return [
    `--allow-net=unix:${socket}`,
    "--allow-read",
    `--allow-write=${writes.join(",")}`,
    `--allow-env=${vars.join(",")}`,
  ];
}

/** The socket's runtime directory and a client's flags for it. */
export function clientGrants(
  client: TerminalClient,
  env: Env = readEnv,
): { runtimeDir: string; flags: string[] } {
  const socket = socketPath(env);
  return {
    runtimeDir: dirname(socket),
    flags: terminalClientFlags(client, socket, env),
  };
}

/** `main.ts client-flags [--task] chat|ask|export`: the flags, or with `--task` the client's whole command; resolves to the exit code. */
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
  const name = client as TerminalClient;
  setQuiet(true);
  if (values.task) {
    return await printTaskCommand({
      task: name,
      instead:
        `run main.ts ${name} with the flags main.ts client-flags ${name} prints`,
      words: () => {
        const grants = clientGrants(name);
        return taskCommand(
          [
            "run",
            ...LOCKED,
            "--quiet",
            "--no-prompt",
            ...grants.flags,
            "main.ts",
            name,
          ],
          grants.runtimeDir,
        );
      },
    });
  }
  let flags: string[];
  try {
    ({ flags } = clientGrants(name));
  } catch (error) {
    if (!(error instanceof AssistantError)) throw error;
    await writeAll(Deno.stderr, `${error.message}\n`);
    return 1;
  }
  await writeAll(Deno.stdout, flags.map((flag) => `${flag}\n`).join(""));
  return 0;
}
