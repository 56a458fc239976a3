/**
 * One chat on one connection: pairs the daemon's answers with the commands
 * sent (each carries a ref of its own), draws events through the renderer,
 * and keeps the prompt on screen exactly while a new line can be taken
 * (idle, nothing awaited).
 */
import type { ListContext, Renderer } from "./chat_render.ts";
import { runSlash, type Waiting } from "./chat_commands.ts";
import { exported, type WriteFile, writeNewFile } from "./chat_export.ts";
import { type DaemonClient, START_HINT } from "./client.ts";
import type { Key } from "./key_stream.ts";
import type { LineEditor } from "./line_editor.ts";
import type { Command, Event, Ref } from "../protocol/protocol.ts";
import { ChatState, exportedSummary } from "./chat_state.ts";
import { USAGE_EXIT } from "../base/command_line.ts";

/** Exit codes of `chat`. */
export const CHAT_EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  noDaemon: 2,
  usage: USAGE_EXIT,
  interrupted: 130,
});

type Awaiting = Waiting & { ref: Ref };

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
  readonly #shared: ChatState;
  #awaiting: Awaiting[] = [];
  #promptShown = false;
  #ended = false;
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
    this.#shared = new ChatState(this.client.hello);
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
    return !this.#ended && this.#shared.state === "idle" &&
      this.#awaiting.length === 0;
  }

  /** True while a call waits for approval and this session has not answered it. */
  get asking(): boolean {
    return this.#asking;
  }

  get #asking(): boolean {
    const waiting = this.#shared.confirm;
    return !this.#ended && waiting !== null && !waiting.answered;
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
    const asked = this.#shared.confirm;
    this.#shared.apply(event);
    switch (event.type) {
      case "conversations":
        if (mine?.kind === "delete") list = { deleted: mine.id };
        break;
      case "export":
        if (mine?.kind === "export") this.#exported(event, mine);
        if (mine?.kind === "summary") {
          const summary = exportedSummary(event.text);
          if (this.#shared.id === event.id) this.#shared.summary = summary;
          this.#print(this.renderer.summary(summary));
          this.#refresh();
          return;
        }
        break;
      case "summary":
        if (this.#shared.isCurrent(event.id)) {
          this.#print(this.renderer.summaryMade(event));
        }
        this.#refresh();
        return;
      case "listening":
        // An answer without a ref still ends the wait for one.
        if (event.ref === undefined) {
          const wait = this.#awaiting.findIndex((w) => w.kind === "listen");
          if (wait !== -1) this.#awaiting.splice(wait, 1);
        }
        break;
      case "error":
        // Another client answered that call first: its answer stands.
        if (event.turn !== true && event.code === "no_such_call") {
          this.#refresh();
          return;
        }
        break;
      case "confirm":
        this.#print(this.renderer.confirm(event));
        this.#refresh();
        return;
      case "approved":
        if (asked?.call === event.call) {
          this.#print(this.renderer.approved(event.allow, asked.answered));
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
    const done = (text: string) => {
      this.#print(text);
      this.#awaiting.splice(this.#awaiting.indexOf(item), 1);
      this.#refresh();
    };
    const shown = exported(this.renderer, event, item.file, {
      dir: this.exportDir,
      writeFile: this.writeFile,
    });
    if (typeof shown === "string") done(shown);
    else shown.then(done);
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
    const waiting = this.#shared.confirm;
    if (!waiting || waiting.answered) return;
    waiting.answered = true;
    this.#send({ type: "approve", call: waiting.call, allow });
    this.#refresh();
  }

  /** Ctrl-C: stops the reply in flight, cancels an edit, or leaves at the prompt. */
  interrupt(): void {
    if (this.#ended) return;
    const replying = this.#shared.state !== "idle" ||
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
    this.#request({ kind: "turn" }, command);
  }

  /** Sends a command with a fresh ref and waits for its answer. */
  #request(wait: Waiting, command: Command): void {
    const ref = this.client.nextRef();
    this.#awaiting.push({ ...wait, ref });
    this.#send({ ...command, ref });
  }

  #command(text: string): void {
    runSlash(text, {
      renderer: this.renderer,
      print: (out) => this.#print(out),
      request: (wait, command) => this.#request(wait, command),
      shared: this.#shared,
      canEdit: this.editor !== null,
      edit: (line) => {
        this.editor?.set(line);
        this.#editing = true;
      },
      quit: () => this.finish(CHAT_EXIT.ok),
    });
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
    const tags = [...this.#shared.tags(), ...(this.#editing ? ["edit"] : [])];
    const prompt = tags.join(" ") + this.prompt;
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
