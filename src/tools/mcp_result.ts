/**
 * An MCP `tools/call` result as the model reads it: text content joined and
 * cut to `tool_output_limit`, every other content item described by its type
 * and size (the model cannot see an image, but it learns that one came).
 */
import { HeadCollector } from "./bounded_output.ts";

/** One content item of a `tools/call` result, as far as it is read here. */
export interface ContentItem {
  type: string;
  text?: unknown;
  data?: unknown;
  mimeType?: unknown;
  uri?: unknown;
  name?: unknown;
  resource?: {
    uri?: unknown;
    mimeType?: unknown;
    text?: unknown;
    blob?: unknown;
  };
}

/** The parts of a result the model's text is made from. */
export interface CallResult {
  content?: ContentItem[];
  structuredContent?: unknown;
  isError?: boolean;
}

/** The model's text of a result, with the measurements of the whole before any cut. */
export interface ResultText {
  content: string;
  bytes: number;
  lines: number;
}

const encoder = new TextEncoder();

/** Bytes that a base64 string decodes to. */
export function base64Bytes(data: string): number {
  const clean = data.replace(/[^A-Za-z0-9+/=_-]/g, "");
  const padding = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor(clean.length * 3 / 4) - padding);
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function sized(kind: string, mime: unknown, bytes: number): string {
  const type = typeof mime === "string" && mime !== "" ? `${mime}, ` : "";
  return `[${kind}: ${type}${bytes} byte${bytes === 1 ? "" : "s"}, not shown]`;
}

/** One item in words: text as it is, anything else by its type and size. */
function describe(item: ContentItem): string {
  switch (item.type) {
    case "text":
      return text(item.text);
    case "image":
    case "audio":
      return sized(item.type, item.mimeType, base64Bytes(text(item.data)));
    case "resource": {
      const resource = item.resource ?? {};
      const bytes = typeof resource.text === "string"
        ? encoder.encode(resource.text).length
        : base64Bytes(text(resource.blob));
      const uri = text(resource.uri);
      return sized(`resource ${uri}`.trim(), resource.mimeType, bytes);
    }
    case "resource_link": {
      const name = text(item.name);
      return `[resource link: ${text(item.uri)}${name ? ` (${name})` : ""}]`;
    }
    default:
      return `[${String(item.type).slice(0, 40)} content, not shown]`;
  }
}

/** The text of a result, cut to `limit` bytes with the runner's note. */
export async function resultText(
  result: CallResult,
  limit: number,
): Promise<ResultText> {
  const items = Array.isArray(result.content) ? result.content : [];
  let whole = items.map(describe).join("\n");
  // A server that sends only structured content still has an answer.
  if (items.length === 0 && result.structuredContent !== undefined) {
    whole = JSON.stringify(result.structuredContent);
  }
  const head = new HeadCollector(Math.max(0, Math.floor(limit)));
  const writer = head.writable.getWriter();
  await writer.write(encoder.encode(whole));
  await writer.close();
  return {
    content: head.bytes === 0 ? "[no output]" : head.text(),
    bytes: head.bytes,
    lines: head.lines,
  };
}
