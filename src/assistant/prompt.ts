/**
 * What the model is sent besides the history: the system prompt stamped with
 * the date and the model in use, the question stamped with the local time,
 * the running summary riding in a question, and tool calls in a shape
 * llama-server can parse back.
 */
import type { ContentPart, ToolCall } from "../llm/chat_types.ts";

/** The system prompt with today's date and the model in use stamped on it. */
export function systemPrompt(prompt: string, model: string, now: Date): string {
  const date = now.toLocaleDateString("en-GB", {
    weekday: "long",
    year: "numeric",
    month: "long",
    day: "numeric",
  });
  return `${prompt}\n\nToday is ${date}. You are running as the model ${
    displayModel(model)
  }.`;
}

/** The question stamped with the local date and time. */
export function stampQuestion(text: string, now: Date): string {
  return `[${localStamp(now)}] ${text}`;
}

/** `YYYY-MM-DD HH:MM UTC+hh:mm` in the daemon's time zone. */
export function localStamp(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  const offset = -now.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const abs = Math.abs(offset);
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${
    pad(now.getDate())
  } ` +
    `${pad(now.getHours())}:${pad(now.getMinutes())} ` +
    `UTC${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

function displayModel(model: string): string {
  // A single llama-server names its model by file path; the file name is what a person knows.
  const base = model.split("/").pop() ?? model;
  return base.replace(/\.gguf$/i, "") || model;
}

/** A tool call as it goes back to the model: arguments that are not a JSON object become `{}`. */
export function replayable(call: ToolCall): ToolCall {
  // llama-server parses the history's arguments and would fail the next
  // request on them; the tool result already says what was wrong.
  try {
    const args: unknown = JSON.parse(call.function.arguments);
    if (typeof args === "object" && args !== null && !Array.isArray(args)) {
      return call;
    }
  } catch {
    // Not JSON: replaced below.
  }
  return { ...call, function: { ...call.function, arguments: "{}" } };
}

/** How a running summary is introduced to the model. */
export const SUMMARY_INTRO = "Summary of the earlier conversation:";

/**
 * A question that carries the running summary ahead of it. The summary rides
 * in a question rather than in the system prompt: llama-server's cache can
 * skip over text removed from a prompt it holds, but not over text put into
 * it, so a summary changed in the system message would make the server read
 * every kept turn again.
 */
export function withSummary<T extends string | ContentPart[]>(
  question: T,
  summary: string,
): T {
  const intro = `${SUMMARY_INTRO}\n${summary}\n\n`;
  if (typeof question === "string") return `${intro}${question}` as T;
  // A question with pictures: the summary goes before its first text.
  const first = question.findIndex((part) => part.type === "text");
  const parts: ContentPart[] = [...(question as ContentPart[])];
  const text = first === -1 ? null : parts[first];
  if (text?.type === "text") {
    parts[first] = { type: "text", text: `${intro}${text.text}` };
  } else {
    parts.unshift({ type: "text", text: intro.trimEnd() });
  }
  return parts as T;
}
