/**
 * The commands about memories, and the model's own way to one: the
 * built-in `remember` tool, which always waits for the user's approval and
 * is offered only while memory is on, never in a private conversation.
 */
import { AssistantError } from "../base/errors.ts";
import { cleanMemory, type Command, type Event } from "../protocol/protocol.ts";
import type { MemoryBook } from "./memory.ts";
import type { Proposer } from "./proposals.ts";
import type { BuiltinTool } from "./tool_calls.ts";

/** The memory commands' types. */
export type MemoryCommand = Extract<
  Command,
  {
    type:
      | "memories"
      | "remember"
      | "forget"
      | "accept"
      | "refuse"
      | "export_memories";
  }
>;

/** Runs a memory command; resolves to the answer for the asker, if any (changes go to every client). */
export function memoryCommand(
  command: MemoryCommand,
  book: MemoryBook,
  proposer: Proposer,
): Event | null {
  const { ref } = command;
  switch (command.type) {
    case "memories":
      return book.list();
    case "remember":
      book.remember(command.text, {
        ...(command.id === undefined ? {} : { id: command.id }),
        ref,
      });
      return null;
    case "forget":
      book.forget(command.id, ref);
      return null;
    case "accept":
      proposer.accept(command.proposal, command.text, ref);
      return null;
    case "refuse":
      proposer.refuse(command.proposal, ref);
      return null;
    case "export_memories":
      return book.export(command.format);
  }
}

/** The built-in `remember` tool: the model asks to keep a fact; the user decides, every time. */
export function rememberTool(book: MemoryBook): BuiltinTool {
  return {
    name: "remember",
    description:
      "Remember a short fact about the user for later conversations, when the user asks you to remember something. The user is asked to approve it first.",
    parameters: {
      type: "object",
      properties: {
        text: {
          type: "string",
          description:
            "The fact, one short sentence, as it should be remembered",
        },
      },
      required: ["text"],
    },
    confirm: true,
    offered: (conversation) => book.on && !conversation.private,
    // A text that could not be kept is refused before the user is asked.
    valid: (args) => cleanMemory(args.text) !== null,
    run(args, conversation) {
      const text = cleanMemory(args.text);
      if (text === null) {
        throw new AssistantError(
          "text must be a fact of 1 to 500 characters",
          { code: "bad_memory" },
        );
      }
      // The turn it comes from has its place once it is saved (a new
      // conversation its id too): the source is named then.
      conversation.remembered(book.remember(text));
      return "Remembered.";
    },
  };
}
