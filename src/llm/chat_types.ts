/** One tool call as the OpenAI-style chat API carries it. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A part of a question with pictures, as llama-server's OpenAI API takes it. */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

/** One message of a chat request (and of a stored turn's `messages`). */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** The text of a message's content: a question with pictures gives its text parts. */
export function contentText(content: string | ContentPart[] | null): string {
  if (content === null) return "";
  if (typeof content === "string") return content;
  return content.flatMap((part) => part.type === "text" ? [part.text] : [])
    .join("\n");
}

/** How many pictures a message's content holds. */
export function contentImages(content: string | ContentPart[] | null): number {
  if (content === null || typeof content === "string") return 0;
  return content.filter((part) => part.type === "image_url").length;
}
