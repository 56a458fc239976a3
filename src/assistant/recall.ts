/**
 * The model's own search of the history (`recall`): a built-in
 * `search_history` tool that returns the best five turns of other
 * conversations than the one it is asked in (title, date, snippet), by
 * words and, with embeddings on, by meaning. It only reads; a private
 * conversation is never stored, so never found.
 */
import { AssistantError } from "../base/errors.ts";
import type { SearchHit } from "../protocol/protocol.ts";
import type { BuiltinTool } from "./tool_calls.ts";

/** Turns a call returns. */
export const RECALLED = 5;

/** The search the tool runs: the query, how many, and the conversation to leave out. */
export type RecallSearch = (
  q: string,
  limit: number,
  exclude: number | null,
) => Promise<SearchHit[]>;

/** The built-in `search_history` tool. */
export function recallTool(
  search: RecallSearch,
  dateOf: (conversation: number) => number | null,
  enabled: () => boolean,
): BuiltinTool {
  return {
    name: "search_history",
    description:
      "Search the user's earlier conversations (not this one) for what was said about something; returns up to five matches with their title, date and an excerpt.",
    parameters: {
      type: "object",
      properties: {
        query: {
          type: "string",
          description: "What to look for, in a few words",
        },
      },
      required: ["query"],
    },
    confirm: false,
    offered: () => enabled(),
    async run(args, conversation) {
      const query = typeof args.query === "string" ? args.query.trim() : "";
      if (query === "") {
        throw new AssistantError("query must be a non-empty string", {
          code: "bad_query",
        });
      }
      const hits = await search(query, RECALLED, conversation.id);
      if (hits.length === 0) {
        return `No earlier conversation matches "${query}".`;
      }
      return hits.map((hit, i) => {
        const updated = dateOf(hit.id);
        const date = updated === null
          ? ""
          : ` (${new Date(updated * 1000).toISOString().slice(0, 10)})`;
        const text = (hit.text ?? hit.snippet).trim().split(/\s+/).join(" ");
        return `${i + 1}. "${hit.title}"${date}: ${text}`;
      }).join("\n");
    },
  };
}
