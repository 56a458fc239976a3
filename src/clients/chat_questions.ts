/**
 * The questions chat asks on one line and takes one key for: a tool call's
 * approval, `/delete` and `/forget` (y or N), and the facts the assistant
 * proposes to remember (y, N, or e to change the fact first). A proposal
 * comes unasked, at any moment: the session asks it only at an empty
 * prompt with no reply streaming, and a turn that starts puts it off, so
 * it never takes keys typed as a question. Piped input is never asked one,
 * since it could come between any two of a script's lines.
 */
import type { Key } from "./key_stream.ts";
import type { Event, MemoryView, ProposalView } from "../protocol/protocol.ts";
import type { Awaiting, Waiting } from "./chat_commands.ts";
import type { ChatState, WaitingCall } from "./chat_state.ts";
import type { Renderer } from "./chat_render.ts";
import type { DaemonClient } from "./client.ts";
import type { LineEditor } from "./line_editor.ts";
import { oneLine } from "./chat_lines.ts";
import type { Command } from "../protocol/commands.ts";

/** What the questions need of the session. */
export interface QuestionHost {
  readonly renderer: Renderer;
  readonly editor: LineEditor | null;
  readonly shared: ChatState;
  readonly client: DaemonClient;
  /** Shows text above the prompt. */
  print(text: string): void;
  /** Sends a command on the connection. */
  send(command: Command): void;
  /** Starts waiting for an answer (or for work under way). */
  wait(item: Awaiting): void;
}

/** A proposal this chat asks about: the question on screen, its fact on the line to change, or answered and waiting for `decided`. */
interface Asked {
  view: ProposalView;
  stage: "asked" | "editing" | "answered";
}

/** The questions waiting for a key, and their answers. */
export class ChatQuestions {
  /** The conversation a `/delete` asks about, while it asks. */
  deleting: number | null = null;
  /** The memory a `/forget` asks about, while it asks. */
  forgetting: number | null = null;
  #proposal: Asked | null = null;
  readonly #host: QuestionHost;

  /** No question asked yet. */
  constructor(host: QuestionHost) {
    this.#host = host;
  }

  /** True while a question waits for its key (a call's approval this chat has not answered included). */
  get asking(): boolean {
    const call = this.#host.shared.confirm;
    return this.deleting !== null || this.forgetting !== null ||
      this.#proposal?.stage === "asked" || (call !== null && !call.answered);
  }

  /** True while a proposed fact is on the line to change: Enter keeps it as changed. */
  get editing(): boolean {
    return this.#proposal?.stage === "editing";
  }

  /** Asks whether to delete a conversation. */
  confirmDelete(id: number): void {
    const title = this.#host.shared.titles.get(id);
    this.deleting = id;
    this.#ask(
      `delete conversation #${id}${
        title === undefined ? "" : ` "${oneLine(title)}"`
      }? [y/N] `,
    );
  }

  /** Asks whether to forget a memory, named by its text in the list just fetched; an unknown number is said at once. */
  confirmForget(id: number, items: MemoryView[]): void {
    const memory = items.find((item) => item.id === id);
    if (memory === undefined) {
      return this.#host.print(this.#host.renderer.error(
        `no such memory #${id}: /memories lists them by number`,
      ));
    }
    this.forgetting = id;
    this.#ask(`forget memory #${id} "${oneLine(memory.text)}"? [y/N] `);
  }

  /** Asks the oldest proposal no client has answered, unless one is being asked; false when none is asked. */
  askProposal(): boolean {
    if (this.#proposal !== null) return false;
    const view = this.#host.shared.proposals[0];
    if (view === undefined) return false;
    this.#proposal = { view, stage: "asked" };
    this.#ask(`remember "${oneLine(view.text)}"? [y/N/e] `);
    return true;
  }

  /** A key while a question asks: y says yes; n, Enter and Ctrl-D say no; e puts a proposed fact on the line to change; false for any other key. */
  answerKey(key: Key): boolean {
    const letter = key.name === "text" ? key.text.toLowerCase() : "";
    if (letter === "e" && this.#proposal?.stage === "asked") {
      this.#proposal.stage = "editing";
      this.#host.print(this.#host.renderer.answer("edit"));
      this.#host.editor?.set(this.#proposal.view.text);
      return true;
    }
    const yes = letter === "y";
    const no = letter === "n" || key.name === "enter" || key.name === "eof";
    if (yes || no) this.answer(yes);
    return yes || no;
  }

  /** Typing that answers no proposal: the proposal asked is put off and the key goes on the line; false when no proposal is asked. */
  setAside(): boolean {
    const text = this.#putOff();
    if (text === "") return false;
    this.#host.print(text);
    return true;
  }

  /** The answer to the question asking: a `/delete`'s, a `/forget`'s, a proposal's, else a call's approval. */
  answer(yes: boolean): void {
    const host = this.#host;
    const { renderer } = host;
    const deleting = this.deleting;
    const forgetting = this.forgetting;
    if (deleting !== null) {
      this.deleting = null;
      host.print(renderer.answer(yes ? "yes" : `no: #${deleting} stays`));
      if (yes) {
        this.#request({ kind: "delete", id: deleting }, {
          type: "delete",
          id: deleting,
        });
      }
    } else if (forgetting !== null) {
      this.forgetting = null;
      host.print(
        renderer.answer(yes ? "yes" : `no: memory #${forgetting} stays`),
      );
      if (yes) {
        this.#request(
          { kind: "memory", change: "forgotten", id: forgetting },
          { type: "forget", id: forgetting },
        );
      }
    } else if (this.#proposal?.stage === "asked") {
      // The answer shows when `decided` says which answer counted.
      this.#proposal.stage = "answered";
      const { proposal } = this.#proposal.view;
      this.#request(
        { kind: "decide" },
        yes ? { type: "accept", proposal } : { type: "refuse", proposal },
      );
    } else {
      const waiting = host.shared.confirm;
      if (!waiting || waiting.answered) return;
      waiting.answered = true;
      host.send({ type: "approve", call: waiting.call, allow: yes });
    }
  }

  /** Enter on a proposed fact being changed: kept as it now reads; an empty line cancels, and the proposal is asked again. */
  edited(line: string): void {
    const asked = this.#proposal;
    if (asked?.stage !== "editing") return;
    const text = line.trim();
    if (text === "") {
      this.#proposal = null;
      return this.#host.print(this.#host.renderer.info("edit cancelled"));
    }
    asked.stage = "answered";
    this.#request({ kind: "decide" }, {
      type: "accept",
      proposal: asked.view.proposal,
      text,
    });
  }

  /** Ctrl-C while a proposed fact is being changed: the line empties, and the proposal is asked again; false when none is. */
  cancelEdit(): boolean {
    if (!this.editing) return false;
    this.#proposal = null;
    this.#host.editor?.clear();
    return true;
  }

  /** The daemon went away: nothing asked stands, and a fact being changed leaves the line. */
  reset(): void {
    this.cancelEdit();
    this.deleting = null;
    this.forgetting = null;
    this.#proposal = null;
  }

  /**
   * Text for the events about questions, null for the rest: a call's
   * approval asked (`call` is the one asked before this event) or decided,
   * a proposal decided, a `/forget`'s list, an answer that came too late.
   * A turn that starts puts off the proposal being asked.
   */
  eventText(
    event: Event,
    mine: Awaiting | undefined,
    call: WaitingCall | null,
  ): string | null {
    const { renderer } = this.#host;
    switch (event.type) {
      case "user":
        return this.#putOff() + renderer.event(event);
      case "confirm":
        return this.#putOff() + renderer.confirm(event);
      case "approved":
        return call?.call === event.call
          ? renderer.approved(event.allow, call.answered)
          : "";
      case "decided":
        return this.#decided(event.proposal, event.accepted, mine);
      case "memories":
        if (mine?.kind !== "forget") return null;
        this.confirmForget(mine.id, event.items);
        return "";
      case "error":
        if (event.turn === true) return null;
        // Another client answered that call first: its answer stands.
        if (event.code === "no_such_call") return "";
        if (mine?.kind === "decide") return this.#refused(event.code);
        return null;
      default:
        return null;
    }
  }

  /** A proposal decided, by this chat (`mine`) or another client: the question closes saying which way. */
  #decided(
    proposal: string,
    accepted: boolean,
    mine: Awaiting | undefined,
  ): string {
    const asked = this.#proposal;
    // One still waiting in the queue goes quietly.
    if (asked?.view.proposal !== proposal) return "";
    if (asked.stage === "editing") this.#host.editor?.clear();
    this.#proposal = null;
    const answer = accepted ? "kept" : "refused";
    return this.#host.renderer.answer(
      mine?.kind === "decide" ? answer : `${answer} (answered elsewhere)`,
    );
  }

  /** This chat's answer to a proposal was refused; null leaves the error to be shown, and the proposal is asked again. */
  #refused(code: string): string | null {
    const asked = this.#proposal;
    this.#proposal = null;
    if (code !== "no_such_proposal") return null;
    // Answered elsewhere first: that client's `decided` said so already,
    // unless the daemon forgot it (a restart).
    if (asked === null) return "";
    this.#host.shared.dropProposal(asked.view.proposal);
    return this.#host.renderer.answer("answered elsewhere");
  }

  /** A turn starts or a call asks: the proposal being asked waits for the next empty prompt. */
  #putOff(): string {
    if (this.#proposal?.stage !== "asked") return "";
    this.#proposal = null;
    return this.#host.renderer.answer("asked again later");
  }

  #ask(question: string): void {
    this.#host.print(this.#host.renderer.question(question));
  }

  #request(wait: Waiting, command: Command): void {
    sendAwaited(this.#host, wait, command);
  }
}

/** Sends a command with a fresh ref and waits for its answer. */
export function sendAwaited(
  host: QuestionHost,
  wait: Waiting,
  command: Command,
): void {
  const ref = host.client.nextRef();
  host.wait({ ...wait, ref });
  host.send({ ...command, ref });
}
