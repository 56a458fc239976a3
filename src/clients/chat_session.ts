/**
 * One chat: pairs the daemon's answers with the commands sent (each carries
 * a ref of its own), draws events through the renderer, and keeps the
 * prompt on screen exactly while a new line can be taken (idle, nothing
 * awaited). Lines typed meanwhile wait their turn; a daemon that goes away
 * is waited for when the chat reconnects (chat.ts), on a new connection.
 */
import type { Renderer } from "./chat_render.ts";
import { type ActionHost, ChatActions } from "./chat_actions.ts";
import type { Awaiting } from "./chat_commands.ts";
import { writeNewFile } from "./chat_export.ts";
import { type DaemonClient, START_HINT } from "./client.ts";
import { CHAT_EXIT, type ChatSessionOptions } from "./chat_options.ts";
import type { Key } from "./key_stream.ts";
import type { LineEditor } from "./line_editor.ts";
import type { Command, Event } from "../protocol/protocol.ts";
import { ChatState } from "./chat_state.ts";
import { AttachQueue } from "./chat_attach.ts";
import { ChatQuestions } from "./chat_questions.ts";
import { eventText, proposalNotes } from "./chat_events.ts";
import { IndexingSign } from "./chat_memory.ts";

/** One chat: what is shown, what is awaited, when the prompt is back. */
export class ChatSession {
  #client: DaemonClient;
  #shared: ChatState;
  #awaiting: Awaiting[] = [];
  #promptShown = false;
  #ended = false;
  #connected = true;
  /** The line holds a question being edited: Enter sends `edit`. */
  #editing = false;
  /** Lines entered while a reply streamed, run in order once it ends. */
  #typedAhead: string[] = [];
  #ready = Promise.withResolvers<void>();
  readonly #exit = Promise.withResolvers<number>();
  readonly #attached: AttachQueue;
  readonly #actions: ChatActions;
  readonly #questions: ChatQuestions;
  #indexing: IndexingSign;
  readonly #options: ChatSessionOptions;

  readonly renderer: Renderer;
  readonly editor: LineEditor | null;

  /** Draws the greeting (and the prompt, when ready). */
  constructor(options: ChatSessionOptions) {
    this.#options = options;
    ({ client: this.#client, renderer: this.renderer, editor: this.editor } =
      options);
    this.#attached = new AttachQueue(
      options.files ?? { cwd: null, home: null },
    );
    const host = this.#host();
    this.#questions = new ChatQuestions(host);
    this.#actions = new ChatActions(host, {
      dir: options.exportDir ?? null,
      writeFile: options.writeFile ?? writeNewFile,
    });
    this.#shared = new ChatState(this.#client.hello);
    this.#indexing = new IndexingSign(this.#client.hello.indexing);
    this.#print(this.renderer.hello(this.#client.hello));
    // Nobody can answer a proposal here: it is only shown.
    if (!this.editor) {
      this.#print(proposalNotes(this.renderer, this.#shared.proposals));
    }
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

  /** True when a new line can be taken: idle with nothing awaited, or a question waits for this session's answer. */
  get ready(): boolean {
    return this.#idle || this.asking;
  }

  get #idle(): boolean {
    return !this.#ended && this.#connected &&
      this.#shared.state === "idle" && this.#awaiting.length === 0;
  }

  /** True while a question waits for its key: a call's approval this session has not answered, a `/delete`, a `/forget`, a proposal. */
  get asking(): boolean {
    return !this.#ended && this.#connected && this.#questions.asking;
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
    if (message !== undefined) {
      this.#safe(() => this.#options.err(`${message}\n`));
    }
    this.#exit.resolve(code);
    this.#ready.resolve();
  }

  /** The daemon closed this connection (or it failed): the chat waits for it to come back, or ends. */
  gone(client: DaemonClient = this.#client): void {
    if (client !== this.#client || !this.#connected || this.#ended) return;
    if (!this.#options.reconnects) {
      return this.finish(
        CHAT_EXIT.noDaemon,
        `The daemon went away; ${START_HINT}`,
      );
    }
    this.#connected = false;
    // Nothing sent on that connection will be answered.
    this.#awaiting = [];
    this.#questions.reset();
    this.#print(this.renderer.info(
      "The daemon went away: waiting for it to come back (Ctrl-C leaves)",
    ));
    this.#refresh();
  }

  /** A new connection after the daemon came back: its greeting shows what is current now. */
  reconnected(client: DaemonClient): void {
    if (this.#ended) return;
    this.#client = client;
    this.#connected = true;
    this.#shared = new ChatState(client.hello);
    this.#indexing = new IndexingSign(client.hello.indexing);
    this.#print(this.renderer.info("The daemon is back"));
    this.#print(this.renderer.hello(client.hello));
    this.#refresh();
  }

  /** One event from the daemon: pairs answers with commands by ref, draws, refreshes the prompt. */
  onEvent(event: Event): void {
    if (this.#ended) return;
    const mine = "ref" in event && event.ref !== undefined
      ? this.#awaiting.find((item) => item.ref === event.ref)
      : undefined;
    // What answers a command of ours ends the wait for it; an export ends
    // once its file is written.
    if (mine && !(event.type === "export" && mine.kind === "export")) {
      this.#awaiting.splice(this.#awaiting.indexOf(mine), 1);
    }
    const asked = this.#shared.confirm;
    const shown = this.#shared.id;
    this.#shared.apply(event);
    // A new figure in the prompt: it is drawn again, with the line.
    if (event.type === "indexing" && this.#indexing.update(event)) {
      this.#hidePrompt();
    }
    const text = this.#questions.eventText(event, mine, asked) ??
      eventText(event, mine, {
        shown,
        renderer: this.renderer,
        shared: this.#shared,
        actions: this.#actions,
        awaiting: this.#awaiting,
        piped: this.editor === null,
      });
    this.#print(text);
    this.#refresh();
  }

  /** A key from the raw-mode terminal. */
  onKey(key: Key): void {
    if (this.#ended || !this.editor) return;
    if (this.asking) {
      if (key.name === "interrupt") return this.interrupt();
      if (this.#questions.answerKey(key)) return this.#refresh();
      // A question begun as a proposal came: the proposal waits for it.
      // The other questions want their key.
      if (key.name !== "text" || !this.#questions.setAside()) {
        this.#safe(() => this.#options.out("\x07"));
        return this.#refresh();
      }
      this.editor.apply(key);
      return this.#refresh();
    }
    const edit = this.editor.apply(key);
    switch (edit.kind) {
      case "changed":
      case "redraw":
        if (this.#promptShown) this.#drawPrompt();
        return;
      case "submit":
        // A fact to keep is no question: it goes whatever streams.
        if (this.#questions.editing) return this.submit(edit.line);
        this.#remember(edit.line);
        // Typed while a reply streams: the line waits for its turn.
        if (!this.ready) {
          if (edit.line.trim() !== "") this.#typedAhead.push(edit.line);
          return;
        }
        return this.submit(edit.line);
      case "interrupt":
        return this.interrupt();
      case "eof":
        return this.finish(CHAT_EXIT.ok);
    }
  }

  /** A line for the next run's history, unless the conversation lives in memory only or it is a memory's text. */
  #remember(line: string): void {
    const text = line.trim();
    if (text === "" || this.#shared.private) return;
    if (/^\/remember(\s|$)/.test(text)) return;
    this.#options.inputLog?.add(line);
  }

  /** Ctrl-C: stops the reply in flight, cancels an edit, or leaves at the prompt (and while the daemon is away). */
  interrupt(): void {
    if (this.#ended) return;
    const replying = this.#shared.state !== "idle" ||
      this.#awaiting.some((item) => item.kind === "turn");
    if (replying && this.#connected) {
      this.#send({ type: "stop" });
    } else if (this.#editing || this.#questions.cancelEdit()) {
      this.#editing = false;
      this.editor?.clear();
      this.#hidePrompt();
      this.#refresh();
    } else {
      this.finish(CHAT_EXIT.interrupted);
    }
  }

  /** Runs one line: a /command or a question. */
  submit(line: string): void {
    const text = line.trim();
    if (this.asking) {
      // Piped input: the line answers the question.
      this.#questions.answer(/^y(es)?$/i.test(text));
      return this.#refresh();
    }
    const command = text.startsWith("/") && !text.startsWith("//");
    // A proposed fact as changed: kept, whatever the line says.
    const fact = this.#questions.editing;
    const editing = this.#editing;
    this.#editing = false;
    if (this.#promptShown) {
      // A command (or a fact) stays on screen as typed; a question comes
      // back as `user`.
      const end = command || fact ? "\r\n" : "\r\x1b[K";
      this.#safe(() => this.#options.out(end));
      this.#promptShown = false;
    } else if (command && !fact) {
      this.#print(this.renderer.user(text));
    }
    if (fact) {
      this.#questions.edited(line);
      return this.#refresh();
    }
    if (text === "") {
      if (editing) this.#print(this.renderer.info("edit cancelled"));
      return this.#refresh();
    }
    const question = text.startsWith("//") ? text.slice(1) : text;
    if (command) this.#actions.command(text);
    else this.#actions.ask(editing ? "edit" : "ask", question);
    this.#refresh();
  }

  /** The session's means, as the actions use them. */
  #host(): ActionHost {
    // deno-lint-ignore no-this-alias
    const session = this;
    return {
      renderer: this.renderer,
      editor: this.editor,
      get shared() {
        return session.#shared;
      },
      get client() {
        return session.#client;
      },
      attached: this.#attached,
      get questions() {
        return session.#questions;
      },
      print: (text) => this.#print(text),
      send: (command) => this.#send(command),
      wait: (item) => this.#awaiting.push(item),
      waited: (item) => {
        const at = this.#awaiting.indexOf(item);
        if (at !== -1) this.#awaiting.splice(at, 1);
        this.#refresh();
      },
      setEditing: (on) => this.#editing = on,
      quit: () => this.finish(CHAT_EXIT.ok),
    };
  }

  #send(command: Command): void {
    const client = this.#client;
    client.send(command).catch(() => this.gone(client));
  }

  /** Shows the prompt when ready, hides it when not, runs a line typed ahead, asks a proposal at an empty line, and wakes line readers. */
  #refresh(): void {
    if (this.#free && this.#typedAhead.length > 0) {
      return this.submit(this.#typedAhead.shift()!);
    }
    if (this.#free) {
      const note = this.#indexing.takeNote();
      if (note !== null) this.#print(this.renderer.info(note));
      // A proposal takes keys: asked only where none is meant for a line.
      if (this.editor?.line === "" && !this.#editing) {
        this.#questions.askProposal();
      }
    }
    if (this.ready) {
      if (this.editor && !this.#promptShown && this.#free) this.#drawPrompt();
      const ready = this.#ready;
      this.#ready = Promise.withResolvers<void>();
      ready.resolve();
    } else {
      this.#hidePrompt();
    }
  }

  /** Idle, nothing awaited, no question asked: a line may run. */
  get #free(): boolean {
    return this.#idle && !this.asking;
  }

  #drawPrompt(): void {
    if (!this.editor) return;
    const indexing = this.#indexing.tag();
    const tags = [
      ...this.#shared.tags(),
      ...(indexing === null ? [] : [indexing]),
      ...(this.#attached.tag === null ? [] : [this.#attached.tag]),
      ...(this.#editing ? ["edit"] : []),
      ...(this.#questions.editing ? ["remember"] : []),
    ];
    const prompt = tags.join(" ") + this.#options.prompt;
    const line = this.renderer.endLine() +
      this.editor.render(prompt, this.#options.columns());
    this.#safe(() => this.#options.out(line));
    this.#promptShown = true;
  }

  #hidePrompt(): void {
    if (!this.#promptShown) return;
    this.#promptShown = false;
    this.#safe(() => this.#options.out("\r\x1b[K"));
  }

  #print(text: string): void {
    if (text === "" || this.#ended) return;
    this.#hidePrompt();
    this.#safe(() => this.#options.out(text));
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
