/**
 * `main.ts export ID [--json]`: prints a stored conversation to stdout, as
 * Markdown or as JSON, through the daemon (the client never reads the
 * history file itself, so it needs only the socket's grants).
 */
import { connectOrExplain } from "./client.ts";
import type { Env } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { writeAll, type Writer } from "../streams/write_all.ts";
import { sanitize } from "./terminal_text.ts";
import {
  readCommandLine,
  USAGE_EXIT,
  UsageError,
} from "../base/command_line.ts";

/** Injected parts of `export`; the real ones by default. */
export interface ExportOptions {
  env?: Env;
  stdout?: Writer;
  stderr?: Writer;
  /** Whether stdout is a terminal: the conversation's text is sanitised there, and byte-exact into a pipe or file; default: asks stdout. */
  terminal?: boolean;
}

/** Exit codes of `export`. */
export const EXPORT_EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  noDaemon: 2,
  usage: USAGE_EXIT,
});

const USAGE = "usage: main.ts export ID [--json]";

/** The parsed arguments of `export`. */
export interface ExportArgs {
  id: number;
  json: boolean;
}

/** Parses export's arguments; UsageError naming what is wrong. */
export function parseExportArgs(args: string[]): ExportArgs {
  const { values, positionals } = readCommandLine(args, {
    options: { json: { type: "boolean" } },
    usage: USAGE,
    positionals: true,
  });
  const json = values.json === true;
  const [word, ...extra] = positionals;
  if (word === undefined || extra.length > 0) {
    throw new UsageError(`Give one conversation id: ${USAGE}`);
  }
  const id = Number(word);
  if (!/^-?\d+$/.test(word) || !Number.isSafeInteger(id)) {
    throw new UsageError(
      `The conversation id must be a whole number (see /list in chat), got ${
        JSON.stringify(word)
      }: ${USAGE}`,
    );
  }
  return { id, json };
}

/** Runs `export`; resolves to the exit code: 0 printed, 1 the daemon refused (no such conversation), 2 no daemon, 64 usage. */
export async function runExport(
  args: string[],
  options: ExportOptions = {},
): Promise<number> {
  const stdout = options.stdout ?? Deno.stdout;
  const stderr = options.stderr ?? Deno.stderr;
  let parsed: ExportArgs;
  try {
    parsed = parseExportArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await writeAll(stderr, `${error.message}\n`);
    return EXPORT_EXIT.usage;
  }
  const client = await connectOrExplain(
    options.env,
    (line) => writeAll(stderr, line),
  );
  if (typeof client === "number") return client;
  await using _client = client;
  const ref = client.nextRef();
  try {
    await client.send({
      type: "export",
      id: parsed.id,
      format: parsed.json ? "json" : "markdown",
      ref,
    });
  } catch (error) {
    if (!(error instanceof AssistantError)) throw error;
    await writeAll(stderr, `${error.message}\n`);
    return EXPORT_EXIT.noDaemon;
  }
  while (true) {
    const event = await client.next();
    if (event === null) {
      await writeAll(
        stderr,
        "The daemon closed the connection before answering.\n",
      );
      return EXPORT_EXIT.noDaemon;
    }
    if (!("ref" in event) || event.ref !== ref) continue;
    if (event.type === "export") {
      // Nothing a model or a tool wrote drives the terminal.
      const terminal = options.terminal ?? Deno.stdout.isTerminal();
      await writeAll(stdout, terminal ? sanitize(event.text) : event.text);
      return EXPORT_EXIT.ok;
    }
    if (event.type === "error") {
      await writeAll(stderr, `${sanitize(event.message)}\n`);
      return EXPORT_EXIT.failed;
    }
  }
}
