/** Reading the fake llama-server's answers in tests: posting a chat, its SSE events, and the shape of a chunk. */
import assert from "node:assert/strict";
import type { FakeLlm } from "./fake_llm.ts";

/** POSTs a chat request body (an object, or JSON text as captured). */
export function post(
  llm: FakeLlm,
  body: unknown,
  query = "",
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${llm.url}/v1/chat/completions${query}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

/** The `data` of each SSE event, `[DONE]` included. */
export function events(text: string): string[] {
  return text.split("\n\n").filter((e) => e !== "").map((e) => {
    assert.ok(e.startsWith("data: "), e);
    return e.slice("data: ".length);
  });
}

/** The chunks of a stream, parsed, `[DONE]` left out. */
export function chunks(text: string): Record<string, unknown>[] {
  return events(text).filter((d) => d !== "[DONE]").map((d) => JSON.parse(d));
}

/** A chunk's shape: its keys and value types, recursively, values dropped. */
export function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map((
        [k, v],
      ) => [k, shape(v)]),
    );
  }
  return value === null ? null : typeof value;
}

/** The distinct chunk shapes of a stream. */
export function shapes(text: string): Set<string> {
  return new Set(
    events(text).map((d) =>
      d === "[DONE]" ? d : JSON.stringify(shape(JSON.parse(d)))
    ),
  );
}
