/**
 * What the fake llama-server plays: scripts of one chat reply each (a plain
 * answer, tokens, tool calls, reasoning, errors as llama-server sends them,
 * cuts and stalls), and the captured streams of a real llama-server.
 */

/** What a chat script knows about the request it answers. */
export interface ChatContext {
  /** The parsed request body. */
  body: Record<string, unknown>;
  /** The model named in the chunks. */
  model: string;
  /** Whether `stream_options.include_usage` was asked for. */
  includeUsage: boolean;
  /** The completion id shared by all chunks. */
  id: string;
  /** Unix seconds shared by all chunks. */
  created: number;
  /** The prompt's size in the fake's tokens. */
  promptTokens: number;
  /** Of those, the tokens the prompt cache reused (`timings.cache_n`); 0 when absent. */
  cachedTokens?: number;
  /** Tokens the reply may have before it finishes with "length": the context left, or `max_tokens`. */
  room: number;
}

/** One step of a streamed answer. */
export type Step =
  | { send: string }
  | { delayMs: number }
  | { hold: true }
  | { cut: true };

/** How the fake answers one chat request: a plain answer or a stream of steps. */
export type Script =
  | { status: number; headers?: Record<string, string>; body: string }
  | {
    headers?: Record<string, string>;
    steps: (context: ChatContext) => Iterable<Step> | AsyncIterable<Step>;
  };

const ALPHABET =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A random id of `length` letters and digits, like llama-server's. */
export function randomId(length = 32): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => ALPHABET[b % ALPHABET.length]).join("");
}

/** One SSE event carrying a chat-completion chunk; `delta` null makes `choices: []`. */
export function chunk(
  context: ChatContext,
  delta: Record<string, unknown> | null,
  finishReason: string | null = null,
  extra: Record<string, unknown> = {},
): string {
  const choices = delta === null
    ? []
    : [{ finish_reason: finishReason, index: 0, delta }];
  return `data: ${
    JSON.stringify({
      choices,
      created: context.created,
      id: context.id,
      model: context.model,
      system_fingerprint: "b0-unknown",
      object: "chat.completion.chunk",
      ...extra,
    })
  }\n\n`;
}

/** What `reply` streams. */
export interface ReplyOptions {
  think?: Iterable<string>;
  content?: Iterable<string>;
  toolCalls?: { name: string; arguments: string | string[]; id?: string }[];
  /** Reasoning inside `content` between `<think>` tags (reasoning_format none). */
  thinkInContent?: boolean;
  finishReason?: string;
  /** Reported prompt size and cached share instead of the fake's own count and prompt cache. */
  usage?: { prompt?: number; cached?: number };
  /** Pause before each token; paced from the stream's start, so timer lateness does not add up. */
  tokenDelayMs?: number;
}

function splitArguments(text: string): string[] {
  const pieces: string[] = [];
  for (let at = 0, n = 0; at < text.length; n++) {
    const size = (n % 3) + 1;
    pieces.push(text.slice(at, at + size));
    at += size;
  }
  return pieces;
}

/** The deltas of a reply, one token each, in order: reasoning, content, tool call pieces. */
function* replyDeltas(
  options: ReplyOptions,
): Generator<Record<string, unknown>> {
  let first = true;
  for (const text of options.think ?? []) {
    if (!options.thinkInContent) {
      yield { reasoning_content: text };
      continue;
    }
    yield { content: first ? `<think>\n${text}` : text };
    first = false;
  }
  if (options.thinkInContent && !first) yield { content: "</think>" };
  for (const text of options.content ?? []) yield { content: text };
  for (const [index, call] of (options.toolCalls ?? []).entries()) {
    const pieces = Array.isArray(call.arguments)
      ? call.arguments
      : splitArguments(call.arguments);
    yield {
      tool_calls: [{
        index,
        id: call.id ?? randomId(),
        type: "function",
        function: { name: call.name, arguments: pieces[0] ?? "" },
      }],
    };
    for (const piece of pieces.slice(1)) {
      yield { tool_calls: [{ index, function: { arguments: piece } }] };
    }
  }
}

/**
 * A streamed reply in the real chunk format: role chunk, tokens, finish,
 * usage, [DONE]. Like llama-server it stops with "length" once the context
 * (or `max_tokens`) has no room for another token.
 */
export function reply(options: ReplyOptions = {}): Script {
  return {
    *steps(context) {
      const pace = options.tokenDelayMs ?? 0;
      let tokens = 0;
      let full = false;
      yield { send: chunk(context, { role: "assistant", content: null }) };
      for (const delta of replyDeltas(options)) {
        if (tokens >= context.room) {
          full = true;
          break;
        }
        if (pace > 0) yield { delayMs: pace };
        yield { send: chunk(context, delta) };
        tokens++;
      }
      const reason = full ? "length" : options.finishReason ??
        (options.toolCalls?.length ? "tool_calls" : "stop");
      // A script's own prompt size comes with its own cached share (0 unless given).
      const prompt = options.usage?.prompt ?? context.promptTokens;
      const modelled = options.usage?.prompt === undefined
        ? context.cachedTokens ?? 0
        : 0;
      const cached = Math.min(options.usage?.cached ?? modelled, prompt);
      // Made-up durations, proportional to the work as a server's are.
      const promptMs = 0.5 + 0.05 * (prompt - cached);
      const predictedMs = Math.max(tokens, 1) * 1.2;
      const timings = {
        cache_n: cached,
        prompt_n: prompt - cached,
        prompt_ms: promptMs,
        prompt_per_token_ms: promptMs / Math.max(prompt - cached, 1),
        prompt_per_second: (1000 * (prompt - cached)) / promptMs,
        predicted_n: tokens,
        predicted_ms: predictedMs,
        predicted_per_token_ms: predictedMs / Math.max(tokens, 1),
        predicted_per_second: (1000 * tokens) / predictedMs,
      };
      if (context.includeUsage) {
        yield { send: chunk(context, {}, reason) };
        const usage = {
          completion_tokens: tokens,
          prompt_tokens: prompt,
          total_tokens: prompt + tokens,
          prompt_tokens_details: { cached_tokens: cached },
        };
        yield { send: chunk(context, null, null, { usage, timings }) };
      } else {
        yield { send: chunk(context, {}, reason, { timings }) };
      }
      yield { send: "data: [DONE]\n\n" };
    },
  };
}

const ERROR_TYPES: Record<number, [string, string]> = {
  400: ["invalid_request_error", "Invalid request"],
  404: ["not_found_error", "File Not Found"],
  500: ["server_error", "Internal server error"],
  503: ["unavailable_error", "Loading model"],
};

/** llama-server's error body: `{"error":{"code","message","type"}}`. */
export function errorBody(
  status: number,
  message?: string,
  extra: Record<string, unknown> = {},
): string {
  const [type, fallback] = ERROR_TYPES[status] ?? ["server_error", "Error"];
  return JSON.stringify({
    error: { code: status, message: message ?? fallback, type, ...extra },
  });
}

/** An HTTP error before any chunk; a string body is sent as it is (not JSON). */
export function httpError(
  status: number,
  error?: { message: string; type?: string; [key: string]: unknown } | string,
): Script {
  if (typeof error === "string") {
    return { status, headers: { "Content-Type": "text/plain" }, body: error };
  }
  const { message, ...extra } = error ?? { message: undefined };
  return { status, body: errorBody(status, message, extra) };
}

function* opening(context: ChatContext, tokens: Iterable<string>) {
  yield { send: chunk(context, { role: "assistant", content: null }) };
  for (const text of tokens) yield { send: chunk(context, { content: text }) };
}

/** Tokens, then `data: {"error":...}` and the connection closes, as llama-server does mid-stream. */
export function streamError(
  message: string,
  options: { tokens?: string[]; code?: number } = {},
): Script {
  return {
    *steps(context) {
      yield* opening(context, options.tokens ?? []);
      yield { send: `data: ${errorBody(options.code ?? 500, message)}\n\n` };
    },
  };
}

/** Tokens, then one chunk that is not JSON (or `data` as given), then [DONE]. */
export function malformed(
  options: { tokens?: string[]; data?: string } = {},
): Script {
  return {
    *steps(context) {
      yield* opening(context, options.tokens ?? []);
      yield { send: `data: ${options.data ?? '{"choices":[{"delta":'}\n\n` };
      yield { send: "data: [DONE]\n\n" };
    },
  };
}

/** Tokens, then the connection breaks off mid-body. */
export function cut(options: { tokens?: string[] } = {}): Script {
  return {
    *steps(context) {
      yield* opening(context, options.tokens ?? []);
      yield { cut: true };
    },
  };
}

/** Without tokens: headers never sent. With tokens: they arrive, then silence until the client leaves. */
export function stall(options: { tokens?: string[] } = {}): Script {
  return {
    *steps(context) {
      if (options.tokens) yield* opening(context, options.tokens);
      yield { hold: true };
    },
  };
}

/** A reply that sends `first`, waits for `gate`, then sends `rest`. */
export function gated(
  first: string,
  gate: Promise<void>,
  rest: string,
): Script {
  return {
    async *steps(context) {
      yield { send: chunk(context, { role: "assistant", content: null }) };
      yield { send: chunk(context, { content: first }) };
      await gate;
      yield { send: chunk(context, { content: rest }) };
      yield { send: chunk(context, {}, "stop") };
      yield { send: "data: [DONE]\n\n" };
    },
  };
}

/** The question of a chat request as the user typed it: its last message without the daemon's date stamp. */
export function askedQuestion(body: unknown): string {
  const messages = (body as { messages?: { content?: unknown }[] } | null)
    ?.messages;
  const last = messages?.at(-1)?.content;
  if (typeof last !== "string") return "";
  // A question may carry the conversation's summary ahead of its stamp.
  const question = last.startsWith("Summary of the earlier conversation:\n")
    ? last.slice(last.search(/\n\n\[\d{4}-/) + 2)
    : last;
  return question.replace(/^\[[^\]]*\] /, "");
}

/** What `answering` streams for one question. */
export interface Plan {
  tokens: string[];
  tokenDelayMs: number;
}

/** Answers each request by the plan of its question, so a request that never got through (stopped, killed) leaves nothing queued. */
export function answering(
  plans: ReadonlyMap<string, Plan>,
  think: string[],
): Script {
  return {
    steps(context) {
      const question = askedQuestion(context.body);
      const plan = plans.get(question);
      if (!plan) throw new Error(`no plan for ${JSON.stringify(question)}`);
      const script = reply({
        think,
        content: plan.tokens,
        tokenDelayMs: plan.tokenDelayMs,
      });
      if (!("steps" in script)) throw new TypeError("reply() is a stream");
      return script.steps(context);
    },
  };
}

/** Some tokens (paced if asked), then nothing until the client aborts. */
export function hold(
  tokens: string[] = [],
  options: { tokenDelayMs?: number } = {},
): Script {
  return {
    *steps(context) {
      yield { send: chunk(context, { role: "assistant", content: null }) };
      for (const text of tokens) {
        if (options.tokenDelayMs) yield { delayMs: options.tokenDelayMs };
        yield { send: chunk(context, { content: text }) };
      }
      yield { hold: true };
    },
  };
}

/** The captures' folder: `tests/fixtures/llama-server`, else `../shared/fixtures/llama-server` beside the repository; null when neither exists. */
export function fixturesDir(): string | null {
  const candidates = [
    new URL("../fixtures/llama-server/", import.meta.url),
    new URL("../../../shared/fixtures/llama-server/", import.meta.url),
  ];
  for (const url of candidates) {
    try {
      if (Deno.statSync(url).isDirectory) {
        return decodeURIComponent(url.pathname);
      }
    } catch {
      // Not there: try the next place.
    }
  }
  return null;
}

/** Plays a captured `.sse`/`.body` file event by event, with the status and content type of its `.headers.txt`. */
export function fixture(
  path: string,
  options: { tokenDelayMs?: number } = {},
): Script {
  const text = Deno.readTextFileSync(path);
  let status = 200;
  let type = "text/event-stream";
  try {
    const head = Deno.readTextFileSync(
      path.replace(/\.(sse|body|json)$/, ".headers.txt"),
    );
    status = Number(head.match(/^HTTP\/\S+ (\d{3})/)?.[1] ?? 200);
    type = head.match(/^content-type: *(.*?)\r?$/im)?.[1] ?? type;
  } catch {
    // No headers captured: a 200 event stream.
  }
  if (status !== 200 || !type.includes("text/event-stream")) {
    return { status, headers: { "Content-Type": type }, body: text };
  }
  const events = text.split(/(?<=\n\n)/).filter((event) => event !== "");
  return {
    *steps() {
      for (const event of events) {
        if (options.tokenDelayMs) yield { delayMs: options.tokenDelayMs };
        yield { send: event };
      }
    },
  };
}
