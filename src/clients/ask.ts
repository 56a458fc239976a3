/**
 * `main.ts ask "question"`: one answer on stdout for scripts. Only the
 * events of this client's own turn count: the `ask` carries a fresh ref, and
 * the turn runs from the `user` echo with that ref to the `done` or turn
 * `error` with it. Another client's turn, even with the same question, is
 * never taken for this one.
 * A tool call of that turn that waits for approval is declined, or with
 * `--yes` allowed; calls of other turns are left to other clients.
 */
import { connectOrExplain } from "./client.ts";
import type { Env } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import type { Event, Ref } from "../protocol/protocol.ts";
import type { MarkdownReplyView } from "./chat_render.ts";
import { writeAll, type Writer } from "../streams/write_all.ts";
import { consoleSize, sanitize } from "./terminal_text.ts";

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
}

/** Exit codes of `ask`. */
export const ASK_EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  noDaemon: 2,
  usage: 64,
  interrupted: 130,
});

const USAGE =
  'usage: main.ts ask [--think] [--json] [--yes] [--render] ["question"]';
const DIM = "\x1b[2m";
const RESET = "\x1b[0m";
const INTERRUPTED: unique symbol = Symbol("interrupted");

/** The parsed arguments of `ask`. */
export interface AskArgs {
  think: boolean;
  json: boolean;
  /** Allow the tool calls of this turn that wait for approval. */
  yes: boolean;
  /** Draw the answer's Markdown when stdout is a colour terminal. */
  render: boolean;
  words: string[];
}

/** Parses ask's arguments; TypeError naming an unknown flag. */
export function parseAskArgs(args: string[]): AskArgs {
  const parsed: AskArgs = {
    think: false,
    json: false,
    yes: false,
    render: false,
    words: [],
  };
  let flags = true;
  for (const arg of args) {
    if (flags && arg === "--") flags = false;
    else if (flags && arg === "--think") parsed.think = true;
    else if (flags && arg === "--json") parsed.json = true;
    else if (flags && arg === "--yes") parsed.yes = true;
    else if (flags && arg === "--render") parsed.render = true;
    else if (flags && arg.startsWith("-") && arg !== "-") {
      throw new TypeError(`Unknown option ${arg}: ${USAGE}`);
    } else parsed.words.push(arg);
  }
  return parsed;
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
    await writeAll(stderr, `${(error as Error).message}\n`);
    return ASK_EXIT.usage;
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
  if (question.trim() === "") {
    await writeAll(
      stderr,
      `No question: give it as an argument or on stdin.\n${USAGE}\n`,
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
  try {
    await client.send({ type: "ask", text: question, ref });
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
    if (code !== null) return stopping ? ASK_EXIT.interrupted : code;
    read = client.next();
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

/** Prints the events of one turn and says when it is over. */
class TurnPrinter {
  /** Set once this client sent `stop`: the stop needs no explaining then. */
  stoppedHere = false;
  #started = false;
  #wroteAnswer = false;
  #thinkOpen = false;

  constructor(
    readonly stdout: Writer,
    readonly stderr: Writer,
    readonly args: AskArgs,
    readonly dim: boolean,
    /** The ref our `ask` carries, and so its answers and turn. */
    readonly ref: Ref,
    /** Which streams are terminals: text from the daemon is sanitised there, and byte-exact into a pipe. */
    readonly terminal: { stdout: boolean; stderr: boolean },
    /** Answers a call of this turn that waits for approval. */
    readonly approve: (call: string, allow: boolean) => Promise<void>,
    /** Draws the answer's Markdown (`--render`); null prints it as sent. */
    readonly view: MarkdownReplyView | null = null,
  ) {}

  /** Handles one event; resolves to the exit code once the turn has ended, else null. */
  async take(event: Event): Promise<number | null> {
    const ours = "ref" in event && event.ref === this.ref;
    if (!this.#started) {
      // Another client's turn can be under way before ours starts; its
      // events (and the stop our ask gives it) are not ours.
      if (!ours) return null;
      if (event.type === "error") {
        await this.#message(event.message);
        return ASK_EXIT.failed;
      }
      if (event.type !== "user") return null;
      this.#started = true;
    } else if ((event.type === "done" || event.type === "error") && !ours) {
      // Ours ends with its own ref; nothing else can end it.
      return null;
    }
    if (this.args.json) {
      await writeAll(this.stdout, JSON.stringify(event) + "\n");
    }
    switch (event.type) {
      case "think":
        if (this.args.think) await this.#think(event.delta);
        return null;
      case "confirm": {
        const allow = this.args.yes;
        await this.approve(event.call, allow);
        if (!allow || this.args.think) {
          await this.#closeThink();
          await this.#err(
            allow
              ? `[allowed ${event.tool}]\n`
              : `[declined ${event.tool}: run ask with --yes to allow tool calls that need approval]\n`,
          );
        }
        return null;
      }
      case "tool":
        if (this.args.think) {
          await this.#closeThink();
          await this.#err(
            `[tool ${this.#forErr(event.name)}${event.done ? " done" : ""}]\n`,
          );
        }
        return null;
      case "token":
        if (!this.args.json) {
          await this.#closeThink();
          await writeAll(
            this.stdout,
            this.view
              ? this.view.push(event.delta)
              : this.terminal.stdout
              ? sanitize(event.delta)
              : event.delta,
          );
        }
        this.#wroteAnswer ||= event.delta !== "";
        return null;
      case "done":
        await this.finish(true);
        if (event.truncated) {
          // The answer stands as far as it goes: a note, not a failure.
          await writeAll(
            this.stderr,
            event.truncated_by === "max_tokens"
              ? "The reply was cut short: it reached max_tokens.\n"
              : "The reply was cut short: the model's context is full.\n",
          );
        }
        if (!event.stopped) return ASK_EXIT.ok;
        if (!this.stoppedHere) {
          await writeAll(
            this.stderr,
            "The reply was stopped before it ended (by another client or a newer question).\n",
          );
        }
        return ASK_EXIT.failed;
      case "error":
        if (event.turn === true) await this.finish();
        await this.#message(event.message);
        return ASK_EXIT.failed;
      default:
        return null;
    }
  }

  /** Ends the open lines: the answer always gets its final newline when complete. */
  async finish(complete = false): Promise<void> {
    await this.#closeThink();
    if (this.args.json) return;
    const drawn = this.view?.end() ?? "";
    // A drawn answer ends its last line itself.
    if (drawn !== "") await writeAll(this.stdout, drawn);
    else if (complete || this.#wroteAnswer) await writeAll(this.stdout, "\n");
    this.#wroteAnswer = false;
  }

  async #think(delta: string): Promise<void> {
    this.#thinkOpen = true;
    await this.#err(this.#forErr(delta));
  }

  /** A message of the daemon's on its own line of stderr. */
  #message(message: string): Promise<void> {
    return writeAll(this.stderr, `${this.#forErr(message)}\n`);
  }

  #forErr(text: string): string {
    return this.terminal.stderr ? sanitize(text) : text;
  }

  async #closeThink(): Promise<void> {
    if (!this.#thinkOpen) return;
    this.#thinkOpen = false;
    await writeAll(this.stderr, "\n");
  }

  #err(text: string): Promise<void> {
    return writeAll(this.stderr, this.dim ? `${DIM}${text}${RESET}` : text);
  }
}
