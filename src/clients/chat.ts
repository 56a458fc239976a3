/**
 * `deno task chat` (`main.ts chat`): the interactive terminal client. On a
 * terminal it edits lines in raw mode, keeps them across runs, and waits
 * for a daemon that goes away; with piped input it takes one line at a
 * time, each once the one before has been answered, and ends when the
 * daemon does. `deno task chat` runs it with the grants client_flags.ts
 * derives: the socket, reading what the user names, and its own folders.
 */
import { resolve } from "node:path";
import { type MarkdownDrawing, Renderer } from "./chat_render.ts";
import { ChatSession } from "./chat_session.ts";
import { CHAT_EXIT } from "./chat_options.ts";
import { connectOrExplain, DaemonClient, reconnect } from "./client.ts";
import type { Env } from "../base/paths.ts";
import { chatPlaces, grantedEnv, homeDir, startDir } from "./chat_places.ts";
import { openHistory } from "./chat_history.ts";
import { KeyStream } from "./key_stream.ts";
import { LineEditor } from "./line_editor.ts";
import { LineStream } from "../streams/line_stream.ts";
import { consoleSize } from "./terminal_text.ts";
import { readCommandLine, UsageError } from "../base/command_line.ts";
import { writeAllSync } from "../streams/write_all.ts";

export { CHAT_EXIT } from "./chat_options.ts";

/** Injected parts of the chat client; the real terminal by default. */
export interface ChatOptions {
  env?: Env;
  /** Keyboard or piped input; default stdin. */
  input?: ReadableStream<Uint8Array>;
  /** Raw-mode line editing; default: stdin and stdout are terminals. */
  terminal?: boolean;
  /** Switches the terminal's raw mode; default Deno.stdin.setRaw. */
  setRaw?: (raw: boolean) => void;
  /** Writes to the screen; default stdout. */
  write?: (text: string) => void;
  /** Writes a fatal message; default stderr. */
  writeError?: (text: string) => void;
  /** ANSI colours; default: stdout is a terminal and NO_COLOR is unset. */
  colors?: boolean;
  /** Terminal width. */
  columns?: () => number;
  /** Terminal height. */
  rows?: () => number;
  /** Listen for SIGINT; default true. */
  signals?: boolean;
  /** Milliseconds between attempts to reach a daemon that went away; default 1000. */
  retryMs?: number;
}

const USAGE = "usage: main.ts chat [--no-think] [--raw] [--export-dir DIR]";
const PROMPT_PLAIN = "> ";
const PROMPT_COLOR = "\x1b[1m>\x1b[0m ";
const MAX_INPUT_LINE = 1024 * 1024;

function writeStdout(text: string): void {
  writeAllSync(Deno.stdout, text);
}

function writeStderr(text: string): void {
  writeAllSync(Deno.stderr, text);
}

/** The parsed arguments of `chat`. */
export interface ChatArgs {
  think: boolean;
  /** Replies as sent, without drawing their Markdown. */
  raw: boolean;
  /** Where `/export N file` writes (as given; relative to where chat starts); null for chat's export folder. */
  exportDir: string | null;
}

/** Parses chat's arguments; UsageError naming an unknown one. */
export function parseChatArgs(args: string[]): ChatArgs {
  const { values } = readCommandLine(args, {
    options: {
      "no-think": { type: "boolean" },
      raw: { type: "boolean" },
      "export-dir": { type: "string" },
    },
    usage: USAGE,
    needs: { "export-dir": "a directory" },
  });
  const dir = values["export-dir"];
  if (dir === "") {
    throw new UsageError(`--export-dir needs a directory: ${USAGE}`);
  }
  return {
    think: !values["no-think"],
    raw: values.raw === true,
    exportDir: dir ?? null,
  };
}

/** Loads the Markdown drawing for a colour terminal; null when it cannot load (replies then show as sent). */
function loadMarkdown(
  columns: () => number,
  rows: () => number,
): Promise<MarkdownDrawing | null> {
  return import("./markdown_view.ts").then(
    ({ markdownDrawing }) => markdownDrawing({ columns, rows }),
    () => null,
  );
}

/** Runs the interactive client; resolves to the exit code: 0 on /quit, Ctrl-D or end of input, 2 when no daemon answers or it goes away, 130 on Ctrl-C at the prompt. */
export async function runChat(
  args: string[],
  options: ChatOptions = {},
): Promise<number> {
  const err = options.writeError ?? writeStderr;
  let think: boolean;
  let raw: boolean;
  let exportDir: string | null;
  try {
    ({ think, raw, exportDir } = parseChatArgs(args));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err(`${error.message}\n`);
    return CHAT_EXIT.usage;
  }
  const colors = options.colors ?? (Deno.stdout.isTerminal() && !Deno.noColor);
  const columns = options.columns ?? (() => consoleSize().columns);
  const rows = options.rows ?? (() => consoleSize().rows);
  // Markdown is drawn only in colour; its library loads while the daemon greets.
  const markdown = colors ? loadMarkdown(columns, rows) : null;
  // Its codes are CHAT_EXIT.failed and CHAT_EXIT.noDaemon.
  const client = await connectOrExplain(options.env, err);
  if (typeof client === "number") return client;
  let current = client;
  await using _client = { [Symbol.asyncDispose]: () => current.close() };

  const terminal = options.terminal ??
    (Deno.stdin.isTerminal() && Deno.stdout.isTerminal());
  const env = options.env ?? grantedEnv;
  const places = chatPlaces(env);
  const started = startDir(env);
  // Typed lines outlive the run only where a person types them.
  const history = terminal
    ? await openHistory(places.historyDir)
    : { lines: [], log: null };
  const out = options.write ?? writeStdout;
  using _raw = terminal ? rawMode(options.setRaw, out) : null;
  const session = new ChatSession({
    client,
    renderer: new Renderer({
      colors,
      think,
      // Fitted to a screen; a transcript keeps its lines whole.
      columns: options.columns !== undefined ||
          (!options.write && Deno.stdout.isTerminal())
        ? columns
        : null,
      screenRows: terminal ? rows : null,
      markdown: await markdown,
      raw,
    }),
    editor: terminal ? new LineEditor({ history: history.lines }) : null,
    out,
    err,
    prompt: colors ? PROMPT_COLOR : PROMPT_PLAIN,
    columns,
    exportDir: exportDir === null
      ? places.exportDir
      : started === null
      ? exportDir
      : resolve(started, exportDir),
    files: { cwd: started, home: homeDir(env) },
    inputLog: history.log,
    // A person at a terminal waits for a daemon that restarts; a script
    // piping lines ends, as it always has.
    reconnects: terminal,
  });
  using _signals = options.signals === false ? null : onSigint(session);

  const ended = new AbortController();
  session.exit.then(() => ended.abort());
  const events = (async () => {
    while (!session.ended) {
      await follow(current, session);
      if (session.ended) break;
      const next = await reconnect(
        current.path,
        ended.signal,
        options.retryMs ?? 1000,
      );
      if (next === null) break;
      current = next;
      session.reconnected(next);
    }
  })();

  const input = options.input ?? Deno.stdin.readable;
  const reader = terminal
    ? input.pipeThrough(new TextDecoderStream()).pipeThrough(new KeyStream())
      .getReader()
    : input.pipeThrough(new LineStream({ maxBytes: MAX_INPUT_LINE }))
      .getReader();
  const reading = (async () => {
    const decoder = new TextDecoder();
    while (!session.ended) {
      const { done, value } = await reader.read();
      if (done) break;
      if ("name" in value) {
        session.onKey(value);
      } else if ("line" in value) {
        await session.whenReady();
        session.submit(decoder.decode(value.line));
      } else {
        // Skipped whole by the framing: it could never have gone.
        await session.whenReady();
        out(session.renderer.error(
          "a line over 1 MB was not sent: one question carries at most 1 MB (the daemon's line limit)",
        ));
      }
    }
    // End of input: leave once the last line has been answered; a call
    // that waits for approval then is declined, as Ctrl-D would.
    await session.whenReady();
    while (session.asking) {
      session.submit("");
      await session.whenReady();
    }
    session.finish(CHAT_EXIT.ok);
  })().catch(() => session.finish(CHAT_EXIT.ok));

  const code = await session.exit;
  // Stdin may be mid-read; cancelling must not hold up the exit.
  reader.cancel().catch(() => {});
  await current.close();
  await events;
  if (options.input) await reading;
  return code;
}

/** Hands the connection's events to the session until it closes. */
async function follow(client: DaemonClient, session: ChatSession) {
  try {
    while (true) {
      const event = await client.next();
      if (event === null) break;
      session.onEvent(event);
    }
  } catch {
    // An unreadable stream is as good as a closed one.
  }
  await client.close();
  session.gone(client);
}

/** Raw mode with bracketed paste while the chat runs; restored on dispose. */
function rawMode(
  setRaw: ((raw: boolean) => void) | undefined,
  out: (text: string) => void,
): Disposable {
  const set = setRaw ?? ((raw: boolean) => Deno.stdin.setRaw(raw));
  set(true);
  out("\x1b[?2004h");
  return {
    [Symbol.dispose]() {
      try {
        out("\x1b[?2004l");
      } catch {
        // The screen is gone; still restore the terminal mode.
      }
      set(false);
    },
  };
}

/** SIGINT (Ctrl-C when not in raw mode, or `kill -INT`) acts like the key. */
function onSigint(session: ChatSession): Disposable {
  const handler = () => session.interrupt();
  Deno.addSignalListener("SIGINT", handler);
  return {
    [Symbol.dispose]: () => Deno.removeSignalListener("SIGINT", handler),
  };
}
