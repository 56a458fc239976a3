/**
 * What a line typed in chat does once it is run: a question goes with the
 * files attached (unless it cannot fit its line), and a `/command` is
 * carried out (its yes-or-no questions are chat_questions.ts's). The
 * session decides when a line runs; this decides what it does.
 */
import { type Awaiting, runSlash, type Waiting } from "./chat_commands.ts";
import type { Command, Event } from "../protocol/protocol.ts";
import { exported, type ExportPlace } from "./chat_export.ts";
import type { AttachQueue } from "./chat_attach.ts";
import { AttachError, questionCommand } from "./attachments.ts";
import {
  type ChatQuestions,
  type QuestionHost,
  sendAwaited,
} from "./chat_questions.ts";

/** What the actions need of the session. */
export interface ActionHost extends QuestionHost {
  readonly attached: AttachQueue;
  /** The questions asked on one line. */
  readonly questions: ChatQuestions;
  /** Ends that wait, and shows the prompt when ready. */
  waited(item: Awaiting): void;
  /** Marks the line as a question being edited: Enter sends `edit`. */
  setEditing(on: boolean): void;
  /** Ends the chat. */
  quit(): void;
}

/** Carries out the lines a session runs. */
export class ChatActions {
  readonly #host: ActionHost;
  readonly #exports: ExportPlace;

  /** Actions on the session's means; exports written to files go as `exports` says. */
  constructor(host: ActionHost, exports: ExportPlace) {
    this.#host = host;
    this.#exports = exports;
  }

  /** An export of ours: shown, or written to its file; the wait for it ends then. */
  exported(
    event: Extract<Event, { type: "export" }>,
    item: Awaiting & { kind: "export" },
  ): void {
    const host = this.#host;
    const done = (text: string) => {
      host.print(text);
      host.waited(item);
    };
    const shown = exported(host.renderer, event, item.file, this.#exports);
    if (typeof shown === "string") done(shown);
    else shown.then(done);
  }

  /** Sends a question with the files attached, unless it cannot fit its line: then nothing goes, and it stays on the line to change. */
  ask(type: "ask" | "edit", text: string): void {
    const host = this.#host;
    const files = host.attached.take();
    const ref = host.client.nextRef();
    let command: Command;
    try {
      command = questionCommand(type, text, ref, files);
    } catch (error) {
      if (!(error instanceof AttachError)) throw error;
      host.attached.restore(files);
      host.print(host.renderer.error(`not sent: ${error.message}`));
      host.editor?.set(text);
      host.setEditing(type === "edit");
      return;
    }
    host.wait({ kind: "turn", ref });
    host.send(command);
  }

  /** Sends a command with a fresh ref and waits for its answer. */
  request(wait: Waiting, command: Command): void {
    sendAwaited(this.#host, wait, command);
  }

  /** Carries out a line that starts with one `/`. */
  command(text: string): void {
    const host = this.#host;
    const { renderer } = host;
    runSlash(text, {
      renderer,
      print: (out) => host.print(out),
      request: (wait, command) => {
        // An edit is a question: the files attached go with it.
        if (command.type === "edit") this.ask("edit", command.text);
        else this.request(wait, command);
      },
      shared: host.shared,
      canEdit: host.editor !== null,
      edit: (line) => {
        host.editor?.set(line);
        host.setEditing(true);
      },
      attach: (paths) => this.#attach(paths),
      detach: () => host.print(renderer.info(host.attached.clear())),
      confirmDelete: (id) => host.questions.confirmDelete(id),
      // Asked by its text, from the list as it is now.
      confirmForget: (id) =>
        this.request({ kind: "forget", id }, { type: "memories" }),
      quit: () => host.quit(),
    });
  }

  /** `/attach`: reads the files (the prompt waits meanwhile), or lists those waiting. */
  #attach(paths: string[]): void {
    const host = this.#host;
    const { renderer } = host;
    if (paths.length === 0) {
      return host.print(renderer.info(host.attached.list()));
    }
    const wait: Awaiting = { kind: "attach", ref: host.client.nextRef() };
    host.wait(wait);
    host.attached.add(paths).then(({ done, refused }) => {
      if (done.length > 0) host.print(renderer.info(done.join("\n")));
      for (const line of refused) host.print(renderer.error(line));
      host.waited(wait);
    });
  }
}
