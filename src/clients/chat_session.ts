/**
 * One chat on one connection: pairs the daemon's answers with the commands
 * sent (each carries a ref of its own), draws events through the renderer,
 * and keeps the prompt on screen exactly while a new line can be taken
 * (idle, nothing awaited).
 */
import { isAbsolute, join } from "node:path";
import type { ListContext, Renderer } from "./chat_render.ts";
import { type DaemonClient, START_HINT } from "./client.ts";
import type { Key } from "./key_stream.ts";
import type { LineEditor } from "./line_editor.ts";
import type { Command, Event, Ref, State } from "../protocol/protocol.ts";

/** Exit codes of `chat`. */
export const CHAT_EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  noDaemon: 2,
  usage: 64,
  interrupted: 130,
});

const HELP = [
  "/new              start a new conversation",
  "/private          start a private conversation: kept in memory only, never saved",
  "/list [N]         the N most recent conversations (default 20)",
  "/open N           open conversation N",
  "/search words     search every conversation",
  "/retry            ask the last question again; the new reply replaces the last turn",
  "/edit [question]  change the last question (alone: puts it on the line to edit)",
  "/rename N title   give conversation N a title",
  "/export N [file]  show conversation N as Markdown, or write it to a new file (.json: JSON)",
  "/delete N         delete conversation N",
  "/raw              replies as sent, or their Markdown drawn again",
  "/help             this help; /quit leaves",
  "Anything else is a question (start it with // to begin with a /).",
  "A tool call that needs approval asks run TOOL {args}? [y/N]:",
  "y runs it, n or Enter declines (the model is told); any client may answer.",
  "Ctrl-C stops a reply; at the prompt Ctrl-C or Ctrl-D leaves (Ctrl-C while editing cancels the edit).",
  "chat --raw starts with replies as sent; ask --render draws Markdown too.",
  "A dim 'context used/size · S of T turns' line: the model was sent only the",
  "S newest of T earlier turns, so the conversation fits its context.",
].join("\n");
const LIST_LIMIT = 20;
const SEARCH_LIMIT = 20;

type Awaiting =
  & (
    | { kind: "list" | "search" | "open" | "new" | "rename" | "turn" }
    | { kind: "delete"; id: number }
    | { kind: "export"; file: string | null }
  )
  & { ref: Ref };

/** Writes an exported conversation to a new file. */
export type WriteFile = (path: string, text: string) => Promise<void>;

const writeNewFile: WriteFile = (path, text) =>
  Deno.writeTextFile(path, text, { createNew: true });

/** What a {@link ChatSession} draws with and talks to. */
export interface ChatSessionOptions {
  /** The greeted connection. */
  client: DaemonClient;
  renderer: Renderer;
  /** The raw-mode line editor; null when lines come piped (no prompt is drawn). */
  editor: LineEditor | null;
  /** Writes to the screen. */
  out: (text: string) => void;
  /** Writes a fatal message. */
  err: (text: string) => void;
  /** The prompt, styled. */
  prompt: string;
  /** Terminal width, read at each redraw. */
  columns: () => number;
  /** Where `/export N file` puts a relative file; default the working directory. */
  exportDir?: string | null;
  /** Writes an export; default a new file (never over an existing one). */
  writeFile?: WriteFile;
}

/** One chat on one connection: what is shown, what is awaited, when the prompt is back. */
export class ChatSession {
  #state: State;
  #awaiting: Awaiting[] = [];
  /** The call waiting for approval, and whether this session answered it. */
  #confirm: { call: string; answered: boolean } | null = null;
  #promptShown = false;
  #ended = false;
  /** The current conversation's last stored question, for `/edit`. */
  #lastQuestion: string | null;
  /** The question of the turn streaming now. */
  #turnQuestion: string | null = null;
  /** The line holds a question being edited: Enter sends `edit`. */
  #editing = false;
  #ready = Promise.withResolvers<void>();
  readonly #exit = Promise.withResolvers<number>();

  readonly client: DaemonClient;
  readonly renderer: Renderer;
  readonly editor: LineEditor | null;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly prompt: string;
  readonly columns: () => number;
  readonly exportDir: string | null;
  readonly writeFile: WriteFile;

  /** Draws the greeting (and the prompt, when ready). */
  constructor(options: ChatSessionOptions) {
    ({
      client: this.client,
      renderer: this.renderer,
      editor: this.editor,
      out: this.out,
      err: this.err,
      prompt: this.prompt,
      columns: this.columns,
    } = options);
    this.exportDir = options.exportDir ?? null;
    this.writeFile = options.writeFile ?? writeNewFile;
    this.#state = this.client.hello.state;
    const { hello } = this.client;
    this.#lastQuestion = hello.turns.at(-1)?.user ?? null;
    // A reply of another conversation is not this one's last question.
    this.#turnQuestion = hello.pending?.id === hello.id
      ? hello.pending.user
      : null;
    // Approvals are shared: a call waits whichever conversation is shown.
    const waiting = hello.confirm ?? hello.pending?.confirm;
    if (waiting) this.#confirm = { call: waiting.call, answered: false };
    this.#print(this.renderer.hello(this.client.hello));
    this.#refresh();
  }

  /** Resolves to the exit code once the session is over. */
  get exit(): Promise<number> {
    return this.#exit.promise;
  }

  /** True once the session is over. */
  get ended(): boolean {
    return this.#ended;
  }

  /** True when a new line can be taken: idle with nothing awaited, or a call waits for this session's answer. */
  get ready(): boolean {
    return this.#idle || this.#asking;
  }

  get #idle(): boolean {
    return !this.#ended && this.#state === "idle" &&
      this.#awaiting.length === 0;
  }

  /** True while a call waits for approval and this session has not answered it. */
  get asking(): boolean {
    return this.#asking;
  }

  get #asking(): boolean {
    return !this.#ended && this.#confirm !== null && !this.#confirm.answered;
  }

  /** Resolves once the session is ready (or over). */
  async whenReady(): Promise<void> {
    while (!this.ready && !this.#ended) await this.#ready.promise;
  }

  /** Ends the session with a code, once. */
  finish(code: number, message?: string): void {
    if (this.#ended) return;
    this.#hidePrompt();
    this.#print(this.renderer.endLine());
    this.#ended = true;
    if (message !== undefined) this.#safe(() => this.err(`${message}\n`));
    this.#exit.resolve(code);
    this.#ready.resolve();
  }

  /** The daemon closed the connection (or it failed). */
  gone(): void {
    this.finish(CHAT_EXIT.noDaemon, `The daemon went away; ${START_HINT}`);
  }

  /** One event from the daemon: pairs answers with commands by ref, draws, refreshes the prompt. */
  onEvent(event: Event): void {
    if (this.#ended) return;
    let list: ListContext = null;
    const mine = "ref" in event && event.ref !== undefined
      ? this.#awaiting.find((item) => item.ref === event.ref)
      : undefined;
    // What answers a command of ours ends the wait for it; an export ends
    // once its file is written.
    if (mine && !(event.type === "export" && mine.kind === "export")) {
      this.#awaiting.splice(this.#awaiting.indexOf(mine), 1);
    }
    switch (event.type) {
      case "user":
        this.#state = "thinking";
        this.#turnQuestion = event.text;
        break;
      case "done":
        this.#confirm = null;
        if (!event.stopped && this.#turnQuestion !== null) {
          this.#lastQuestion = this.#turnQuestion;
        }
        break;
      case "state":
        this.#state = event.state;
        break;
      case "conversations":
        if (mine?.kind === "delete") list = { deleted: mine.id };
        break;
      case "conversation":
        this.#lastQuestion = event.turns.at(-1)?.user ?? null;
        // A reply in flight stays with the conversation it started in.
        this.#turnQuestion = null;
        break;
      case "export":
        if (mine?.kind === "export") this.#exported(event, mine);
        break;
      case "error":
        // Another client answered that call first: its answer stands.
        if (event.turn !== true && event.message === "no such call") {
          this.#refresh();
          return;
        }
        break;
      case "confirm":
        this.#confirm = { call: event.call, answered: false };
        this.#print(this.renderer.confirm(event));
        this.#refresh();
        return;
      case "approved":
        if (this.#confirm?.call === event.call) {
          this.#print(
            this.renderer.approved(event.allow, this.#confirm.answered),
          );
          this.#confirm = null;
        }
        this.#refresh();
        return;
    }
    this.#print(this.renderer.event(event, list));
    this.#refresh();
  }

  /** Shows an export of ours, or writes it to its file. */
  #exported(
    event: Extract<Event, { type: "export" }>,
    item: Awaiting & { kind: "export" },
  ): void {
    const done = () => {
      this.#awaiting.splice(this.#awaiting.indexOf(item), 1);
      this.#refresh();
    };
    if (item.file === null) {
      this.#print(this.renderer.block(event.text));
      done();
      return;
    }
    const path = isAbsolute(item.file)
      ? item.file
      : join(this.exportDir ?? Deno.cwd(), item.file);
    this.writeFile(path, event.text).then(
      () => this.#print(this.renderer.info(`wrote #${event.id} to ${path}`)),
      (error) => this.#print(this.renderer.error(writeProblem(path, error))),
    ).finally(done);
  }

  /** A key from the raw-mode terminal. */
  onKey(key: Key): void {
    if (this.#ended || !this.editor) return;
    if (this.#asking) {
      this.#answerKey(key);
      return;
    }
    if (key.name === "enter" && !this.ready) {
      // Lines are taken one at a time: the reply in flight comes first.
      this.#safe(() => this.out("\x07"));
      return;
    }
    const edit = this.editor.apply(key);
    switch (edit.kind) {
      case "changed":
      case "redraw":
        if (this.#promptShown) this.#drawPrompt();
        return;
      case "submit":
        this.submit(edit.line);
        return;
      case "interrupt":
        this.interrupt();
        return;
      case "eof":
        this.finish(CHAT_EXIT.ok);
        return;
      case "unchanged":
        return;
    }
  }

  /** y allows, n, Enter and Ctrl-D decline, Ctrl-C stops the reply. */
  #answerKey(key: Key): void {
    if (key.name === "interrupt") return this.interrupt();
    if (key.name === "text" && /^[yY]$/.test(key.text)) {
      return this.#answer(true);
    }
    if (
      key.name === "enter" || key.name === "eof" ||
      (key.name === "text" && /^[nN]$/.test(key.text))
    ) {
      return this.#answer(false);
    }
    this.#safe(() => this.out("\x07"));
  }

  #answer(allow: boolean): void {
    if (!this.#confirm || this.#confirm.answered) return;
    this.#confirm.answered = true;
    this.#send({ type: "approve", call: this.#confirm.call, allow });
    this.#refresh();
  }

  /** Ctrl-C: stops the reply in flight, cancels an edit, or leaves at the prompt. */
  interrupt(): void {
    if (this.#ended) return;
    const replying = this.#state !== "idle" ||
      this.#awaiting.some((item) => item.kind === "turn");
    if (replying) {
      this.#send({ type: "stop" });
    } else if (this.#editing) {
      this.#editing = false;
      this.editor?.clear();
      if (this.#promptShown) this.#drawPrompt();
    } else {
      this.finish(CHAT_EXIT.interrupted);
    }
  }

  /** Runs one line: a /command or a question. */
  submit(line: string): void {
    const text = line.trim();
    if (this.#asking) {
      // Piped input: the line answers the waiting call.
      this.#answer(/^y(es)?$/i.test(text));
      return;
    }
    const command = text.startsWith("/") && !text.startsWith("//");
    const editing = this.#editing;
    this.#editing = false;
    if (this.#promptShown) {
      // A command stays on screen as typed; a question comes back as `user`.
      if (command) this.#safe(() => this.out("\r\n"));
      else this.#safe(() => this.out("\r\x1b[K"));
      this.#promptShown = false;
    } else if (command) {
      this.#print(this.renderer.user(text));
    }
    if (text === "") {
      if (editing) this.#print(this.renderer.info("edit cancelled"));
      this.#refresh();
      return;
    }
    const question = text.startsWith("//") ? text.slice(1) : text;
    if (command) this.#command(text);
    else if (editing) this.#turn({ type: "edit", text: question });
    else this.#turn({ type: "ask", text: question });
    this.#refresh();
  }

  /** Sends a command that starts a turn: its `user` echo, or its error, ends the wait. */
  #turn(command: Command): void {
    this.#request("turn", command);
  }

  /** Sends a command with a fresh ref and waits for its answer. */
  #request(
    kind: "list" | "search" | "open" | "new" | "rename" | "turn",
    command: Command,
  ): void {
    const ref = this.client.nextRef();
    this.#awaiting.push({ kind, ref });
    this.#send({ ...command, ref });
  }

  #command(text: string): void {
    const [name = "", ...words] = text.split(/\s+/);
    const rest = words.join(" ");
    const id = /^\d+$/.test(rest) && Number.isSafeInteger(Number(rest))
      ? Number(rest)
      : null;
    const usage = (what: string) =>
      this.#print(this.renderer.error(`usage: ${what}`));
    switch (name) {
      case "/help":
      case "/?":
        this.#print(this.renderer.info(HELP));
        return;
      case "/raw": {
        const drawn = this.renderer.toggleMarkdown();
        this.#print(this.renderer.info(
          drawn === null
            ? "Markdown is drawn only on a colour terminal: replies show as sent"
            : drawn
            ? "Markdown drawn from the next reply on"
            : "Replies show as sent from the next one on; /raw draws Markdown again",
        ));
        return;
      }
      case "/quit":
      case "/exit":
        this.finish(CHAT_EXIT.ok);
        return;
      case "/new":
        return this.#request("new", { type: "new" });
      case "/private":
        return this.#request("new", { type: "new", private: true });
      case "/list": {
        const limit = rest === "" ? LIST_LIMIT : id;
        if (limit === null || limit < 1) return usage("/list [N]");
        return this.#request("list", {
          type: "list",
          limit: Math.min(limit, 10_000),
        });
      }
      case "/open":
        if (id === null) return usage("/open N (a number from /list)");
        return this.#request("open", { type: "open", id });
      case "/delete": {
        if (id === null) return usage("/delete N (a number from /list)");
        const ref = this.client.nextRef();
        this.#awaiting.push({ kind: "delete", id, ref });
        this.#send({ type: "delete", id, ref });
        return;
      }
      case "/search":
        if (rest === "") return usage("/search words");
        return this.#request("search", {
          type: "search",
          q: rest,
          limit: SEARCH_LIMIT,
        });
      case "/retry":
        return this.#turn({ type: "retry" });
      case "/edit":
        return this.#edit(rest);
      case "/rename": {
        const target = numberOf(words[0]);
        const title = words.slice(1).join(" ");
        if (target === null || title === "") {
          return usage("/rename N title (N a number from /list)");
        }
        return this.#request("rename", { type: "rename", id: target, title });
      }
      case "/export": {
        const target = numberOf(words[0]);
        if (target === null) {
          return usage("/export N [file] (N a number from /list)");
        }
        const file = words.slice(1).join(" ") || null;
        const ref = this.client.nextRef();
        this.#awaiting.push({ kind: "export", file, ref });
        this.#send({
          type: "export",
          id: target,
          format: file?.toLowerCase().endsWith(".json") ? "json" : "markdown",
          ref,
        });
        return;
      }
      default:
        this.#print(
          this.renderer.error(`unknown command ${name}: type /help`),
        );
    }
  }

  /** `/edit text` sends it; `/edit` alone puts the last question on the line. */
  #edit(text: string): void {
    if (text !== "") return this.#turn({ type: "edit", text });
    if (!this.editor) {
      this.#print(
        this.renderer.error(
          "usage: /edit new question (in a terminal, /edit alone puts the last question on the line)",
        ),
      );
      return;
    }
    const last = this.#lastQuestion;
    if (last === null) {
      this.#print(this.renderer.error("nothing to edit: no question yet"));
      return;
    }
    // A question that starts with / was typed as //.
    this.editor.set(last.startsWith("/") ? `/${last}` : last);
    this.#editing = true;
  }

  #send(command: Command): void {
    this.client.send(command).catch(() => this.gone());
  }

  /** Shows the prompt when ready, hides it when not, and wakes line readers. */
  #refresh(): void {
    if (this.ready) {
      if (this.editor && !this.#promptShown && this.#idle) this.#drawPrompt();
      const ready = this.#ready;
      this.#ready = Promise.withResolvers<void>();
      ready.resolve();
    } else {
      this.#hidePrompt();
    }
  }

  #drawPrompt(): void {
    if (!this.editor) return;
    const prompt = this.#editing ? `edit${this.prompt}` : this.prompt;
    const line = this.renderer.endLine() +
      this.editor.render(prompt, this.columns());
    this.#safe(() => this.out(line));
    this.#promptShown = true;
  }

  #hidePrompt(): void {
    if (!this.#promptShown) return;
    this.#promptShown = false;
    this.#safe(() => this.out("\r\x1b[K"));
  }

  #print(text: string): void {
    if (text === "" || this.#ended) return;
    this.#hidePrompt();
    this.#safe(() => this.out(text));
  }

  /** A screen that cannot be written to (a closed pipe) ends the session. */
  #safe(write: () => void): void {
    try {
      write();
    } catch {
      if (!this.#ended) {
        this.#ended = true;
        this.#exit.resolve(1);
        this.#ready.resolve();
      }
    }
  }
}

function numberOf(word: string | undefined): number | null {
  if (word === undefined || !/^\d+$/.test(word)) return null;
  const value = Number(word);
  return Number.isSafeInteger(value) ? value : null;
}

/** Why an export file could not be written, and what to do. */
function writeProblem(path: string, error: unknown): string {
  if (error instanceof Deno.errors.AlreadyExists) {
    return `${path} already exists: give another file name`;
  }
  if (error instanceof Deno.errors.NotCapable) {
    return `chat may not write ${path}: start it with --export-dir DIR and a write grant for DIR (see the README), or run main.ts export N > file`;
  }
  return `cannot write ${path}: ${
    error instanceof Error ? error.message : String(error)
  }`;
}
