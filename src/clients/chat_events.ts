/**
 * What chat shows for each event that is no question's (those are
 * chat_questions.ts's): the answers to its own commands as what they
 * answer (a list, an export, a memory changed), others' changes as little
 * as says enough, and the turn's events as the renderer draws them.
 */
import type { Event, ProposalView } from "../protocol/events.ts";
import type { ChatActions } from "./chat_actions.ts";
import type { Awaiting } from "./chat_commands.ts";
import type { ListContext, Renderer } from "./chat_render.ts";
import { type ChatState, exportedSummary } from "./chat_state.ts";
import { commandError, memoryChanged, proposalNote } from "./chat_memory.ts";

/** What showing an event needs of the session. */
export interface EventContext {
  /** The conversation shown before this event. */
  shown: number | null;
  renderer: Renderer;
  shared: ChatState;
  actions: ChatActions;
  /** What the session waits for; an answer without a ref may end a wait. */
  awaiting: Awaiting[];
  /** Lines come piped: a proposal cannot be asked, only shown. */
  piped: boolean;
}

/** Proposals where nobody can answer them (piped input), left for a chat on a terminal or the page. */
export function proposalNotes(
  renderer: Renderer,
  items: readonly ProposalView[],
): string {
  return items.map((item) => renderer.info(proposalNote(item))).join("");
}

/** The text for one event; `mine` is the wait it answers, if it answers one of this chat's commands. */
export function eventText(
  event: Event,
  mine: Awaiting | undefined,
  context: EventContext,
): string {
  const { renderer, shared, awaiting } = context;
  let list: ListContext = null;
  switch (event.type) {
    case "conversations":
      list = {
        current: context.shown,
        ...(mine?.kind === "delete" ? { deleted: mine.id } : {}),
      };
      break;
    case "export":
      if (mine?.kind === "export") context.actions.exported(event, mine);
      if (mine?.kind === "summary") {
        const summary = exportedSummary(event.text);
        if (shared.id === event.id) shared.summary = summary;
        return renderer.summary(summary);
      }
      // An export of ours shows once written (or at once without a file).
      return "";
    case "summary":
      return shared.isCurrent(event.id) ? renderer.summaryMade(event) : "";
    case "listening": {
      // An answer without a ref still ends the wait for one.
      const wait = awaiting.findIndex((w) => w.kind === "listen");
      if (event.ref === undefined && wait !== -1) awaiting.splice(wait, 1);
      break;
    }
    case "memories":
      // Another client's change, or one the model made: nothing to say.
      if (mine?.kind === "memories") return renderer.memories(event.items);
      if (mine?.kind === "memory") {
        return renderer.info(memoryChanged(mine, event.items));
      }
      return "";
    case "proposed":
      // On a terminal they are asked, one at a time, at an empty prompt.
      return context.piped ? proposalNotes(renderer, event.items) : "";
    case "error":
      if (mine && event.turn !== true) {
        const message = commandError(event.code, event.message);
        return renderer.event({ ...event, message });
      }
      break;
  }
  return renderer.event(event, list);
}
