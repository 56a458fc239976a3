/**
 * What the fake llama-server records of each request: what came, what the
 * prompt cache gave it, and whether (and when) the client went away.
 */
import type { CacheUse } from "./fake_llm_cache.ts";

/** One request as the fake saw it. */
export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/props?model=tiny-a&autoload=false`. */
  path: string;
  url: URL;
  text: string;
  /** The body parsed as JSON, or undefined. */
  body: unknown;
  /** A chat request's prompt size in the fake's tokens; null for other requests. */
  promptTokens: number | null;
  /** What the prompt cache gave a chat request it evaluated; null for other requests and refused ones. */
  cache: CacheUse | null;
  /** performance.now() on arrival. */
  at: number;
  /** performance.now() when the client went away before the answer ended. */
  abortedAt: number | null;
  /** Resolves with `abortedAt` once the client goes away early. */
  aborted: Promise<number>;
  /** Resolves when the answer is over, either way. */
  done: Promise<"completed" | "aborted">;
}

/** A new record of `request`, and the `finish` that marks its answer over (once); an abort is also handed to `aborted`. */
export function recordRequest(
  request: Request,
  url: URL,
  text: string,
  body: unknown,
  aborted: (record: RecordedRequest) => void,
): {
  record: RecordedRequest;
  finish: (how: "completed" | "aborted") => void;
} {
  const gone = Promise.withResolvers<number>();
  const done = Promise.withResolvers<"completed" | "aborted">();
  const record: RecordedRequest = {
    method: request.method,
    path: url.pathname + url.search,
    url,
    text,
    body,
    promptTokens: null,
    cache: null,
    at: performance.now(),
    abortedAt: null,
    aborted: gone.promise,
    done: done.promise,
  };
  let over = false;
  const finish = (how: "completed" | "aborted") => {
    if (over) return;
    over = true;
    if (how === "aborted") {
      record.abortedAt = performance.now();
      gone.resolve(record.abortedAt);
      aborted(record);
    }
    done.resolve(how);
  };
  return { record, finish };
}

/** Model names the requests named: `/props?model=` and chat bodies. */
export function namedModels(requests: readonly RecordedRequest[]): string[] {
  const names: string[] = [];
  for (const request of requests) {
    const query = request.url.searchParams.get("model");
    if (query !== null) names.push(query);
    const body = request.body as { model?: unknown } | undefined;
    const model = typeof body === "object" && body !== null
      ? body.model
      : undefined;
    if (
      /\/chat\/completions$/.test(request.url.pathname) &&
      typeof model === "string"
    ) {
      names.push(model);
    }
  }
  return names;
}
