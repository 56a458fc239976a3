/**
 * `export`: a stored conversation as Markdown (to read or paste elsewhere)
 * or as JSON in the `desktop-assistant/1` format (to process or import).
 */
import type { ExportFormat } from "../protocol/protocol.ts";
import type { ConversationRecord } from "../store/store.ts";
import { localStamp } from "./prompt.ts";
import { fenceFor } from "./attachments.ts";

/** The `format` field of a JSON export. */
export const EXPORT_FORMAT = "desktop-assistant/1";

/** The conversation in the given format, ending with a newline. */
export function exportText(
  record: ConversationRecord,
  format: ExportFormat,
): string {
  return format === "json" ? exportJson(record) : exportMarkdown(record);
}

/** `{"format": "desktop-assistant/1", id, title, created, updated, summary: {text, turns} | null, turns: [{user, reply, tools, at, files?}]}`, times in Unix seconds; `files` (absent when none) is `[{name, mime, bytes, kind, text}]`, `text` null for a picture. */
export function exportJson(record: ConversationRecord): string {
  const { id, title, created, updated, summary, turns } = record;
  const document = {
    format: EXPORT_FORMAT,
    id,
    title,
    created,
    updated,
    summary: summary === null
      ? null
      : { text: summary.text, turns: summary.turns },
    turns: turns.map(({ user, reply, tools, at, attached }) => ({
      user,
      reply,
      tools,
      at,
      ...(attached
        ? {
          files: attached.map(({ name, mime, bytes, kind, text }) => ({
            name,
            mime,
            bytes,
            kind,
            text,
          })),
        }
        : {}),
    })),
  };
  return JSON.stringify(document, null, 2) + "\n";
}

/** The title, the dates, the summary before the turns it covers, then each turn: its time, the question quoted, the tools used and the reply. */
export function exportMarkdown(record: ConversationRecord): string {
  const date = (seconds: number) => localStamp(new Date(seconds * 1000));
  const count = record.turns.length;
  const parts = [
    `# ${oneLine(record.title) || `Conversation ${record.id}`}`,
    `Conversation ${record.id} · created ${date(record.created)} · updated ${
      date(record.updated)
    } · ${count} turn${count === 1 ? "" : "s"}`,
  ];
  const summary = record.summary;
  if (summary !== null) {
    // It covers the first turns, so it comes before them.
    const covered = summary.turns === 1 ? "turn 1" : `turns 1–${summary.turns}`;
    parts.push(`## Summary of ${covered}`);
    parts.push(
      summary.text.trim() === "" ? "*(empty summary)*" : summary.text.trim(),
    );
  }
  record.turns.forEach((turn, index) => {
    parts.push(`## ${index + 1} · ${date(turn.at)}`);
    if (turn.user.trim() !== "" || !turn.attached) parts.push(quote(turn.user));
    for (const file of turn.attached ?? []) {
      // A picture by its name; a text whole, in a fence it cannot close.
      if (file.text === null) {
        parts.push(`*Picture: ${oneLine(file.name)} (${file.mime})*`);
      } else {
        const fence = fenceFor(file.text);
        parts.push(
          `*File: ${oneLine(file.name)}*\n\n${fence}\n${file.text}\n${fence}`,
        );
      }
    }
    if (turn.tools.length > 0) {
      parts.push(`*Tools used: ${turn.tools.join(", ")}*`);
    }
    parts.push(turn.reply.trim() === "" ? "*(no reply)*" : turn.reply.trim());
  });
  return parts.join("\n\n") + "\n";
}

/**
 * Quoted line by line, so the question's own Markdown stays inside it. The
 * line ends are Markdown's (CommonMark's): `\n`, `\r\n` and a lone `\r`;
 * U+2028 and U+2029 end no Markdown line and stay inside theirs.
 */
function quote(text: string): string {
  return text.split(/\r\n|\r|\n/).map((line) => line === "" ? ">" : `> ${line}`)
    .join("\n");
}

function oneLine(text: string): string {
  return text.trim().split(/\s+/).join(" ");
}
