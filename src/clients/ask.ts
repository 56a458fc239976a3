/**
 * `main.ts ask "question"`: one answer on stdout for scripts. Only the
 * events of this client's own turn count: the `ask` carries a fresh ref, and
 * the turn runs from the `user` echo with that ref to the `done` or turn
 * `error` with it. Another client's turn, even with the same question, is
 * never taken for this one.
 * A tool call of that turn that waits for approval is declined, or with
 * `--yes` allowed; calls of other turns are left to other clients.
 */
import { connectOrExplain, type DaemonClient } from "./client.ts";
import type { Env } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import type { MarkdownReplyView } from "./chat_render.ts";
import { writeAll, type Writer } from "../streams/write_all.ts";
import { consoleSize } from "./terminal_text.ts";
import { ASK_EXIT, STOPPED_ELSEWHERE, TurnPrinter } from "./ask_turn.ts";
import {
  type Attached,
  AttachError,
  checkCount,
  type FileSource,
  questionCommand,
  readAttachment,
} from "./attachments.ts";
import { grantedEnv, homeDir, startDir } from "./chat_places.ts";
import type { Command } from "../protocol/commands.ts";

export { ASK_EXIT } from "./ask_turn.ts";
import { readCommandLine, UsageError } from "../base/command_line.ts";

/** Injected parts of `ask`; the real ones by default. */
export interface AskOptions {
  env?: Env;
  /** Where the question comes from when no argument gives it. */
  stdin?: ReadableStream<Uint8Array>;
  stdout?: Writer;
  stderr?: Writer;
  /** Dim the reasoning on stderr; default: stderr is a terminal and NO_COLOR is unset. */
  dimStderr?: boolean;
  /** Whether stdout, and stderr, are terminals: daemon text written there is sanitised as chat does; default: asks each stream. */
  terminal?: { stdout: boolean; stderr: boolean };
  /** Whether `--render` may draw Markdown; default: stdout is a terminal and NO_COLOR is unset. */
  colorStdout?: boolean;
  /** Aborts like Ctrl-C; default: SIGINT. */
  interrupt?: AbortSignal;
  /** Where `--file` paths are found; default where the user started ask, with the user's rights. */
  files?: FileSource;
}

const USAGE =
  'usage: main.ts ask [--think] [--json] [--yes] [--render] [--file PATH]... ["question"]';
const INTERRUPTED: unique symbol = Symbol("interrupted");

/** The parsed arguments of `ask`. */
export interface AskArgs {
  think: boolean;
  json: boolean;
  /** Allow the tool calls of this turn that wait for approval. */
  yes: boolean;
  /** Draw the answer's Markdown when stdout is a colour terminal. */
  render: boolean;
  /** Files to send with the question, as given. */
  files: string[];
  words: string[];
}

/** Parses ask's arguments (words after `--` are the question's); UsageError naming an unknown flag. */
export function parseAskArgs(args: string[]): AskArgs {
  const { values, positionals } = readCommandLine(args, {
    options: {
      think: { type: "boolean" },
      json: { type: "boolean" },
      yes: { type: "boolean" },
      render: { type: "boolean" },
      file: { type: "string", multiple: true },
    },
    usage: USAGE,
    positionals: true,
    needs: { file: "a path" },
  });
  return {
    think: values.think === true,
    json: values.json === true,
    yes: values.yes === true,
    render: values.render === true,
    files: values.file ?? [],
    words: positionals,
  };
}

/** Counts interrupts (SIGINT, or one abort of an injected signal). */
class Interrupts implements Disposable {
  #count = 0;
  #waiters: (() => void)[] = [];
  #dispose: () => void;

  constructor(signal?: AbortSignal) {
    const fire = () => {
      this.#count++;
      for (const wake of this.#waiters.splice(0)) wake();
    };
    if (signal) {
      signal.addEventListener("abort", fire, { once: true });
      if (signal.aborted) fire();
      this.#dispose = () => signal.removeEventListener("abort", fire);
    } else {
      Deno.addSignalListener("SIGINT", fire);
      this.#dispose = () => Deno.removeSignalListener("SIGINT", fire);
    }
  }

  get count(): number {
    return this.#count;
  }

  /** Resolves once more than `n` interrupts have come. */
  after(n: number): Promise<void> {
    if (this.#count > n) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiters.push(resolve);
    return promise.then(() => this.after(n));
  }

  [Symbol.dispose](): void {
    this.#dispose();
  }
}

/** Runs `ask`; resolves to the exit code: 0 done, 1 turn error or stopped, 2 no daemon, 64 usage, 130 Ctrl-C. */
export async function runAsk(
  args: string[],
  options: AskOptions = {},
): Promise<number> {
  const stdout = options.stdout ?? Deno.stdout;
  const stderr = options.stderr ?? Deno.stderr;
  let parsed: AskArgs;
  try {
    parsed = parseAskArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await writeAll(stderr, `${error.message}\n`);
    return ASK_EXIT.usage;
  }
  // Files are read first: one that cannot go stops ask before anything waits.
  const env = options.env ?? grantedEnv;
  let files: Attached[];
  try {
    checkCount(parsed.files.length);
    const source = options.files ??
      { cwd: startDir(env), home: homeDir(env) };
    files = [];
    for (const path of parsed.files) {
      files.push(await readAttachment(path, source));
    }
  } catch (error) {
    if (!(error instanceof AttachError)) throw error;
    await writeAll(stderr, `${error.message}\n`);
    return ASK_EXIT.failed;
  }
  using interrupts = new Interrupts(options.interrupt);
  const interrupted = (n: number): Promise<typeof INTERRUPTED> =>
    interrupts.after(n).then(() => INTERRUPTED);

  let question = parsed.words.join(" ");
  if (parsed.words.length === 0) {
    if (!options.stdin && Deno.stdin.isTerminal()) {
      await writeAll(stderr, "Type the question, then Ctrl-D.\n");
    }
    const stdin = options.stdin ?? Deno.stdin.readable;
    const read = await Promise.race([
      new Response(stdin).text(),
      interrupted(0),
    ]);
    if (read === INTERRUPTED) return ASK_EXIT.interrupted;
    // `echo question | ask` should not send the newline echo added.
    question = read.trimEnd();
  }
  // Files alone are a question: the daemon asks about them.
  if (question.trim() === "" && files.length === 0) {
    await writeAll(
      stderr,
      `Give the question as an argument or on stdin: ${USAGE}\n`,
    );
    return ASK_EXIT.usage;
  }

  // Its codes are ASK_EXIT.failed and ASK_EXIT.noDaemon.
  const client = await connectOrExplain(
    options.env,
    (line) => writeAll(stderr, line),
  );
  if (typeof client === "number") return client;
  await using _client = client;
  if (interrupts.count > 0) return ASK_EXIT.interrupted;

  const dim = options.dimStderr ??
    (Deno.stderr.isTerminal() && !Deno.noColor);
  const ref = client.nextRef();
  const terminal = options.terminal ??
    { stdout: Deno.stdout.isTerminal(), stderr: Deno.stderr.isTerminal() };
  const turn = new TurnPrinter(
    stdout,
    stderr,
    parsed,
    dim,
    ref,
    terminal,
    (call, allow) => client.send({ type: "approve", call, allow }),
    await markdownView(parsed, options),
  );
  let command: Command;
  try {
    // Refused here, the question never goes: the daemon would only skip it.
    command = questionCommand("ask", question, ref, files);
  } catch (error) {
    if (!(error instanceof AttachError)) throw error;
    await writeAll(stderr, `${error.message}\n`);
    return ASK_EXIT.failed;
  }
  try {
    await client.send(command);
  } catch (error) {
    if (!(error instanceof AssistantError)) throw error;
    await writeAll(stderr, `${error.message}\n`);
    return ASK_EXIT.noDaemon;
  }

  let stopping = false;
  let read = client.next();
  let interrupt = interrupted(0);
  while (true) {
    const next = await Promise.race([read, interrupt]);
    if (next === INTERRUPTED) {
      // The first Ctrl-C stops the reply and waits for its end; a second one leaves.
      if (stopping) return ASK_EXIT.interrupted;
      stopping = true;
      turn.stoppedHere = true;
      await client.send({ type: "stop" }).catch(() => {});
      interrupt = interrupted(1);
      continue;
    }
    if (next === null) {
      await turn.finish();
      await writeAll(
        stderr,
        `The daemon closed the connection before the reply ended.\n`,
      );
      return stopping ? ASK_EXIT.interrupted : ASK_EXIT.noDaemon;
    }
    const code = await turn.take(next);
    if (code === STOPPED_ELSEWHERE) {
      const shutDown = await daemonLeft(client);
      await writeAll(
        stderr,
        shutDown
          ? "The reply was stopped before it ended: the daemon shut down.\n"
          : "The reply was stopped before it ended (by another client or a newer question).\n",
      );
      // A daemon that went away is 2, as a connection lost mid-reply is.
      return shutDown ? ASK_EXIT.noDaemon : ASK_EXIT.failed;
    }
    if (code !== null) return stopping ? ASK_EXIT.interrupted : code;
    read = client.next();
  }
}

/**
 * Whether the daemon stopped the reply by shutting down: then it closes the
 * connection right after the stopped `done`, while a daemon that goes on
 * (another client's stop, a newer question) answers a ping.
 */
async function daemonLeft(client: DaemonClient): Promise<boolean> {
  const ref = client.nextRef();
  try {
    await client.send({ type: "ping", ref });
  } catch {
    return true;
  }
  while (true) {
    const event = await client.next().catch(() => null);
    if (event === null) return true;
    if (event.type === "pong" && event.ref === ref) return false;
  }
}

/** The Markdown view for `--render` on a colour terminal; null prints the answer as sent. */
async function markdownView(
  args: AskArgs,
  options: AskOptions,
): Promise<MarkdownReplyView | null> {
  const color = options.colorStdout ??
    (Deno.stdout.isTerminal() && !Deno.noColor);
  if (!args.render || args.json || !color) return null;
  const { MarkdownView } = await import("./markdown_view.ts");
  return new MarkdownView({
    columns: () => consoleSize().columns,
    rows: () => consoleSize().rows,
  });
}
