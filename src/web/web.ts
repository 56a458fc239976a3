/**
 * `main.ts web [--port N]`: the browser canvas as its own process. It checks
 * that it was given exactly what it needs (its loopback address, the
 * daemon's socket, the page's files), serves the page, prints the address
 * with its token, and runs until SIGINT or SIGTERM.
 */
import { CLIENT_ENV_VARS, clientSocketPath } from "../clients/client.ts";
import {
  readCommandLine,
  USAGE_EXIT,
  UsageError,
} from "../base/command_line.ts";
import { DEFAULT_WEB_PORT } from "../base/config.ts";
import type { Env } from "../base/paths.ts";
import { holds, type Kind } from "../base/grant_query.ts";
import { AssistantError } from "../base/errors.ts";
import { log } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { loadStaticFiles, WEB_DIR } from "./static_files.ts";
import { WEB_HOST, WebServer } from "./web_server.ts";

const USAGE = "usage: main.ts web [--port N]";

/** What the canvas's grants are derived from. */
export interface WebGrantInput {
  socketPath: string;
  port: number;
  /** The page's files; default `web/`. */
  webDir?: string;
}

function checked(path: string, what: string): string {
  if (path.includes(",")) {
    throw new AssistantError(
      `The ${what} ${path} contains a comma, which a Deno permission list cannot express: move or rename it`,
    );
  }
  return path;
}

/** The canvas's grants, each kind with its values in flag order: its own address and the socket to listen and connect, the socket and its files to read, the variable that locates the socket. None of the daemon's. */
function webGrants(input: WebGrantInput): [Kind, string[]][] {
  const socket = checked(input.socketPath, "socket path");
  const dir = checked(input.webDir ?? WEB_DIR, "page folder");
  return [
    ["net", [`${WEB_HOST}:${input.port}`, `unix:${socket}`]],
    ["read", [socket, dir]],
    ["write", [socket]],
    ["env", [...CLIENT_ENV_VARS]],
  ];
}

/** The canvas's deno flags (see {@link webGrants}). */
export function webFlags(input: WebGrantInput): string[] {
  return webGrants(input).map(([kind, values]) =>
    `--allow-${kind}=${values.join(",")}`
  );
}

/** The flags among {@link webFlags} this process lacks, one value each, e.g. `--allow-net=127.0.0.1:8765`. */
export function missingWebGrants(input: WebGrantInput): string[] {
  return webGrants(input).flatMap(([kind, values]) =>
    values.filter((value) => !holds(kind, value)).map((value) =>
      `--allow-${kind}=${value}`
    )
  );
}

/** Parses `web`'s arguments: `{ port }`; UsageError naming a bad one. */
export function parseWebArgs(args: string[]): { port: number } {
  const { values } = readCommandLine(args, {
    options: { port: { type: "string" } },
    usage: USAGE,
    needs: { port: "a port number from 0 to 65535" },
  });
  if (values.port === undefined) return { port: DEFAULT_WEB_PORT };
  const port = Number(values.port);
  if (!/^\d+$/.test(values.port) || port > 65535) {
    throw new UsageError(
      `--port takes a port number from 0 to 65535, not ${
        JSON.stringify(values.port)
      }: ${USAGE}`,
    );
  }
  return { port };
}

/** Options of {@link runWeb}, for tests. */
export interface RunWebOptions {
  env?: Env;
  /** Ends the canvas instead of a signal. */
  signal?: AbortSignal;
}

/** Runs the canvas until SIGINT or SIGTERM; resolves to the exit code (0 after a signal, 1 when it cannot start, 64 for bad usage). */
export async function runWeb(
  args: string[],
  options: RunWebOptions = {},
): Promise<number> {
  let port: number;
  try {
    ({ port } = parseWebArgs(args));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await writeAll(Deno.stderr, `${error.message}\n`);
    return USAGE_EXIT;
  }
  let server: WebServer;
  try {
    const socketPath = clientSocketPath(options.env);
    const missing = missingWebGrants({ socketPath, port });
    if (missing.length > 0) {
      throw new AssistantError(
        `The canvas needs ${
          missing.join(" ")
        }: start it with deno task web, which grants exactly what it needs`,
      );
    }
    server = await WebServer.start({
      port,
      socketPath,
      files: await loadStaticFiles(),
    });
  } catch (error) {
    if (!(error instanceof AssistantError)) throw error;
    await writeAll(Deno.stderr, `${error.message}\n`);
    return 1;
  }
  await using _server = server;
  log.info("web canvas listening", { port: server.port });
  // The token is a secret: it goes to the terminal, never to the log.
  await writeAll(
    Deno.stdout,
    `desktop-assistant canvas: ${server.url}\n` +
      `Open that address in a browser on this machine; Ctrl-C stops the canvas.\n`,
  );
  await untilStopped(options.signal);
  log.info("web canvas stopping", { pages: server.pages });
  return 0;
}

/** Resolves on SIGINT, SIGTERM or the given signal. */
async function untilStopped(signal?: AbortSignal): Promise<void> {
  const stopped = Promise.withResolvers<void>();
  const stop = () => stopped.resolve();
  const signals = ["SIGINT", "SIGTERM"] as const;
  for (const name of signals) Deno.addSignalListener(name, stop);
  signal?.addEventListener("abort", stop, { once: true });
  if (signal?.aborted) stop();
  try {
    await stopped.promise;
  } finally {
    for (const name of signals) Deno.removeSignalListener(name, stop);
    signal?.removeEventListener("abort", stop);
  }
}
