/**
 * What `ask` prints of its own turn: the answer on stdout (drawn, or byte
 * for byte), reasoning and tool lines on stderr with `--think`, every event
 * as a JSON line with `--json`, and when the turn is over, its exit code.
 */
import type { Event, Ref } from "../protocol/events.ts";
import type { MarkdownReplyView } from "./chat_turn.ts";
import { writeAll, type Writer } from "../streams/write_all.ts";
import { sanitize } from "./terminal_text.ts";
import { USAGE_EXIT } from "../base/command_line.ts";

/** Exit codes of `ask`. */
export const ASK_EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  noDaemon: 2,
  usage: USAGE_EXIT,
  interrupted: 130,
});

/** The turn was stopped by someone else: another client, a newer question, or the daemon's shutdown. */
export const STOPPED_ELSEWHERE: unique symbol = Symbol("stopped elsewhere");

const DIM = "\x1b[2m";
const RESET = "\x1b[0m";

/** What a {@link TurnPrinter} prints. */
export interface PrintArgs {
  /** Reasoning and tool lines on stderr. */
  think: boolean;
  /** Every event as a JSON line instead of the answer. */
  json: boolean;
  /** Allow the turn's tool calls that wait for approval. */
  yes: boolean;
}

/** Prints the events of one turn and says when it is over. */
export class TurnPrinter {
  /** Set once this client sent `stop`: the stop needs no explaining then. */
  stoppedHere = false;
  #started = false;
  #wroteAnswer = false;
  #thinkOpen = false;

  constructor(
    readonly stdout: Writer,
    readonly stderr: Writer,
    readonly args: PrintArgs,
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
  async take(event: Event): Promise<number | typeof STOPPED_ELSEWHERE | null> {
    const ours = "ref" in event && event.ref === this.ref;
    if (!this.#started) {
      // Before the turn starts this connection has sent its `ask` alone, so
      // a command error without a ref answers it: a line the daemon could
      // not read (over its limit) comes back without the ref it carried.
      if (
        event.type === "error" && event.turn !== true &&
        event.ref === undefined
      ) {
        await this.#message(event.message);
        return ASK_EXIT.failed;
      }
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
        return this.stoppedHere ? ASK_EXIT.failed : STOPPED_ELSEWHERE;
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
