/**
 * One chat on one connection: pairs the daemon's answers with the commands
 * sent, draws events through the renderer, and keeps the prompt on screen
 * exactly while a new line can be taken (idle, nothing awaited).
 */
import type { ListContext, Renderer } from "./chat_render.ts";
import { type DaemonClient, START_HINT } from "./client.ts";
import type { Key } from "./key_stream.ts";
import type { LineEditor } from "./line_editor.ts";
import type { Command, Event, State } from "../protocol.ts";

/** Exit codes of `chat`. */
export const CHAT_EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  noDaemon: 2,
  usage: 64,
  interrupted: 130,
});

const HELP = [
  "/new            start a new conversation",
  "/list [N]       the N most recent conversations (default 20)",
  "/open N         open conversation N",
  "/search words   search every conversation",
  "/delete N       delete conversation N",
  "/raw            replies as sent, or their Markdown drawn again",
  "/help           this help; /quit leaves",
  "Anything else is a question (start it with // to begin with a /).",
  "Ctrl-C stops a reply; at the prompt Ctrl-C or Ctrl-D leaves.",
  "chat --raw starts with replies as sent; ask --render draws Markdown too.",
].join("\n");
const LIST_LIMIT = 20;
const SEARCH_LIMIT = 20;

type Awaiting =
  | { kind: "list" | "search" | "open" | "new" }
  | { kind: "ask"; text: string }
  | { kind: "delete"; id: number };

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
}

/** One chat on one connection: what is shown, what is awaited, when the prompt is back. */
export class ChatSession {
  #state: State;
  #awaiting: Awaiting[] = [];
  #promptShown = false;
  #ended = false;
  #ready = Promise.withResolvers<void>();
  readonly #exit = Promise.withResolvers<number>();

  readonly client: DaemonClient;
  readonly renderer: Renderer;
  readonly editor: LineEditor | null;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly prompt: string;
  readonly columns: () => number;

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
    this.#state = this.client.hello.state;
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

  /** True when a new line can be taken: idle, with nothing awaited. */
  get ready(): boolean {
    return !this.#ended && this.#state === "idle" &&
      this.#awaiting.length === 0;
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

  /** One event from the daemon: pairs answers with commands, draws, refreshes the prompt. */
  onEvent(event: Event): void {
    if (this.#ended) return;
    let list: ListContext = null;
    const head = this.#awaiting[0];
    const answers = (...kinds: Awaiting["kind"][]) =>
      head !== undefined && kinds.includes(head.kind);
    switch (event.type) {
      case "user":
        // Another client's question can come between ours and its echo.
        if (head?.kind === "ask" && head.text === event.text) {
          this.#awaiting.shift();
        }
        this.#state = "thinking";
        break;
      case "state":
        this.#state = event.state;
        break;
      case "conversations":
        if (answers("list", "delete")) {
          this.#awaiting.shift();
          if (head?.kind === "delete") list = { deleted: head.id };
        }
        break;
      case "results":
        if (answers("search")) this.#awaiting.shift();
        break;
      case "conversation":
        if (answers("open", "new")) this.#awaiting.shift();
        break;
      case "error":
        if (event.turn !== true && head !== undefined) this.#awaiting.shift();
        break;
    }
    this.#print(this.renderer.event(event, list));
    this.#refresh();
  }

  /** A key from the raw-mode terminal. */
  onKey(key: Key): void {
    if (this.#ended || !this.editor) return;
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

  /** Ctrl-C: stops the reply in flight, or leaves at the prompt. */
  interrupt(): void {
    if (this.#ended) return;
    const replying = this.#state !== "idle" ||
      this.#awaiting.some((item) => item.kind === "ask");
    if (replying) this.#send({ type: "stop" });
    else this.finish(CHAT_EXIT.interrupted);
  }

  /** Runs one line: a /command or a question. */
  submit(line: string): void {
    const text = line.trim();
    const command = text.startsWith("/") && !text.startsWith("//");
    if (this.#promptShown) {
      // A command stays on screen as typed; a question comes back as `user`.
      if (command) this.#safe(() => this.out("\r\n"));
      else this.#safe(() => this.out("\r\x1b[K"));
      this.#promptShown = false;
    } else if (command) {
      this.#print(this.renderer.user(text));
    }
    if (text === "") {
      this.#refresh();
      return;
    }
    if (command) this.#command(text);
    else this.#ask(text.startsWith("//") ? text.slice(1) : text);
    this.#refresh();
  }

  #ask(text: string): void {
    // The daemon echoes what it stores: lone surrogates become U+FFFD.
    this.#awaiting.push({ kind: "ask", text: text.toWellFormed() });
    this.#send({ type: "ask", text });
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
        this.#awaiting.push({ kind: "new" });
        this.#send({ type: "new" });
        return;
      case "/list": {
        const limit = rest === "" ? LIST_LIMIT : id;
        if (limit === null || limit < 1) return usage("/list [N]");
        this.#awaiting.push({ kind: "list" });
        this.#send({ type: "list", limit: Math.min(limit, 10_000) });
        return;
      }
      case "/open":
        if (id === null) return usage("/open N (a number from /list)");
        this.#awaiting.push({ kind: "open" });
        this.#send({ type: "open", id });
        return;
      case "/delete":
        if (id === null) return usage("/delete N (a number from /list)");
        this.#awaiting.push({ kind: "delete", id });
        this.#send({ type: "delete", id });
        return;
      case "/search":
        if (rest === "") return usage("/search words");
        this.#awaiting.push({ kind: "search" });
        this.#send({ type: "search", q: rest, limit: SEARCH_LIMIT });
        return;
      default:
        this.#print(
          this.renderer.error(`unknown command ${name}: type /help`),
        );
    }
  }

  #send(command: Command): void {
    this.client.send(command).catch(() => this.gone());
  }

  /** Shows the prompt when ready, hides it when not, and wakes line readers. */
  #refresh(): void {
    if (this.ready) {
      if (this.editor && !this.#promptShown) this.#drawPrompt();
      const ready = this.#ready;
      this.#ready = Promise.withResolvers<void>();
      ready.resolve();
    } else {
      this.#hidePrompt();
    }
  }

  #drawPrompt(): void {
    if (!this.editor) return;
    const line = this.renderer.endLine() +
      this.editor.render(this.prompt, this.columns());
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
