/**
 * `/help`'s text: each command with what it does, then notes on what chat
 * asks and shows, in two columns where the screen is wide enough.
 */
import type { IndentedLine } from "./chat_lines.ts";

const COMMANDS: [string, string][] = [
  ["/new", "start a new conversation"],
  [
    "/private",
    "start a private conversation: kept in memory only, never saved (the prompt says private while it lasts)",
  ],
  [
    "/list [N]",
    "the N most recent conversations (default 20; * marks the one shown)",
  ],
  ["/open N", "open conversation N"],
  [
    "/search words",
    "search every conversation, by words and, where the daemon makes vectors, by meaning: (by meaning) marks a hit its words did not find; /search --words words searches by words alone, --meaning by meaning alone",
  ],
  [
    "/retry",
    "ask the last question again; the new reply replaces the last turn",
  ],
  [
    "/edit [question]",
    "change the last question (alone: puts it on the line to edit)",
  ],
  ["/rename N title", "give conversation N a title"],
  [
    "/attach [PATH…]",
    "send files with the next question (text, pictures, PDF; about 750 KB in all; the prompt counts them); alone: list them",
  ],
  ["/detach", "drop the attached files"],
  [
    "/export N [file]",
    "show conversation N as Markdown, or write it to a new file in the export folder (.json: JSON)",
  ],
  ["/delete N", "delete conversation N (after a y)"],
  ["/memories", "what the assistant remembers of you, by number"],
  [
    "/memories export [file]",
    "show them as Markdown, or write them to a new file in the export folder (.json: JSON)",
  ],
  [
    "/remember text",
    "keep a fact about you for the next conversations; /remember #N text rewrites memory N",
  ],
  ["/forget N", "forget memory N (after a y)"],
  [
    "/summary",
    "the summary of the earlier turns the model is no longer sent whole",
  ],
  [
    "/talk",
    "start or stop listening, for every client: the voice client records meanwhile and asks what it heard once listening stops; starting it stops a reply in flight (the prompt says listening meanwhile)",
  ],
  ["/raw", "replies as sent, or their Markdown drawn again"],
  ["/help", "this help, also /?; /quit leaves, also /exit"],
];

const NOTES = [
  "Anything else is a question (start it with // to begin with a /).",
  'A tool call that needs approval asks run TOOL {args}? [y/N]: y runs it, n or Enter declines (the model is told); any client may answer. The model\'s own remember asks remember "fact"? [y/N].',
  'The assistant may propose facts to remember, asked at an empty prompt: remember "fact"? [y/N/e]: y keeps it, n or Enter refuses it (never proposed again), e puts it on the line to change first (Enter keeps it as changed); typing anything else sets it aside until the prompt is free again.',
  "The prompt reads indexing N% while the daemon makes old turns searchable by meaning.",
  "Ctrl-C stops a reply; at the prompt Ctrl-C or Ctrl-D leaves (Ctrl-C while editing cancels the edit).",
  "Lines typed while a reply streams wait: each Enter queues one, and they run in order once the reply ends (Ctrl-C ends it sooner).",
  "When the daemon goes away chat waits for it to come back. Up and Down recall lines typed, in earlier runs too (never those of a private conversation).",
  "chat --raw starts with replies as sent; ask --render draws Markdown too.",
  "A dim 'context used/size · S of T turns' line: the model was sent only the S newest of T earlier turns, so the conversation fits its context (the older ones in a summary, when the daemon keeps one).",
  "A dim 'N tokens/s · prompt R read, C reused' line after a reply: how fast it came, and how much of the prompt llama-server read anew or took from its cache.",
];

/** Columns of the command names in `/help`, where the screen is wide enough for two columns. */
const NAME_COLUMNS = 18;

/** `/help` for a screen this wide: two columns where they fit, else each description under its command. */
export function helpLines(width: number): IndentedLine[] {
  const twoColumns = width - NAME_COLUMNS >= 30;
  const lines: IndentedLine[] = [];
  for (const [name, what] of COMMANDS) {
    if (twoColumns && name.length >= NAME_COLUMNS) {
      // Too long for its column: the description starts under it.
      const indent = " ".repeat(NAME_COLUMNS);
      lines.push({ text: name, indent: "" });
      lines.push({ text: indent + what, indent });
    } else if (twoColumns) {
      const indent = " ".repeat(NAME_COLUMNS);
      lines.push({ text: name.padEnd(NAME_COLUMNS) + what, indent });
    } else {
      lines.push({ text: name, indent: "" });
      lines.push({ text: `    ${what}`, indent: "    " });
    }
  }
  for (const note of NOTES) lines.push({ text: note, indent: "" });
  return lines;
}
