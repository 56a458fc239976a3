/**
 * The fake llama-server's token side: a small tokenizer, the chat template
 * rendered as the captured `apply_template.json` shows it (ChatML), the
 * tokens of a chat request's prompt and of the reply the model generated,
 * `/tokenize` and `/apply-template`, and the 400 a request longer than the
 * context gets, shaped like the captures.
 */

/** Tokens the template and the tokenizer treat as one. */
const SPECIAL =
  /<__media__>|<\|im_start\|>|<\|im_end\|>|<think>|<\/think>|<tool_call>|<\/tool_call>|<tool_response>|<\/tool_response>/g;
/** A word piece (up to five letters or digits, with the space before it), or any other single character. */
const PIECE = / ?[\p{L}\p{M}\p{N}]{1,5}|[\s\S]/gu;

/** The fake's tokens of a text, as `/tokenize` lists them. */
export function tokenPieces(text: string): string[] {
  const pieces: string[] = [];
  let at = 0;
  // One push per piece: a spread of a long text's pieces would pass the
  // engine's limit on a call's arguments.
  const add = (part: string) => {
    for (const piece of part.match(PIECE) ?? []) pieces.push(piece);
  };
  for (const special of text.matchAll(SPECIAL)) {
    add(text.slice(at, special.index));
    pieces.push(special[0]);
    at = special.index + special[0].length;
  }
  add(text.slice(at));
  return pieces;
}

/** Counts of long texts already seen: a conversation's history comes back with every request. */
const counted = new Map<string, number>();
const COUNTED_MAX = 4096;

/** How many tokens the fake makes of a text. */
export function countTokens(text: string): number {
  if (text.length < 1024) return tokenPieces(text).length;
  let tokens = counted.get(text);
  if (tokens === undefined) {
    tokens = tokenPieces(text).length;
    if (counted.size >= COUNTED_MAX) counted.clear();
    counted.set(text, tokens);
  }
  return tokens;
}

type Message = {
  role?: unknown;
  content?: unknown;
  tool_calls?: { function?: { name?: unknown; arguments?: unknown } }[];
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A chat request's messages and tools rendered as a ChatML template would (Qwen style). */
export function renderPrompt(body: Record<string, unknown>): string {
  return renderParts(body).join("");
}

/** Token lists of long parts already seen: a conversation's history comes back with every request. */
const split = new Map<string, readonly string[]>();
const SPLIT_MAX = 1024;

function partTokens(text: string): readonly string[] {
  if (text.length < 1024) return tokenPieces(text);
  let tokens = split.get(text);
  if (tokens === undefined) {
    tokens = tokenPieces(text);
    if (split.size >= SPLIT_MAX) split.clear();
    split.set(text, tokens);
  }
  return tokens;
}

/** The prompt's tokens: its parts tokenized apart (no token spans two), so a history seen before costs little. */
export function promptTokenList(body: Record<string, unknown>): string[] {
  const tokens: string[] = [];
  for (const part of renderParts(body)) {
    for (const token of partTokens(part)) tokens.push(token);
  }
  return tokens;
}

/** The prompt's size in the fake's tokens. */
export function promptTokens(body: Record<string, unknown>): number {
  return promptTokenList(body).length;
}

/** Whether the request's generation prompt opens a think block (thinking is on unless turned off). */
export function thinkingPrompt(body: Record<string, unknown>): boolean {
  const kwargs = isRecord(body.chat_template_kwargs)
    ? body.chat_template_kwargs
    : {};
  return kwargs.enable_thinking !== false;
}

/** A reply as the model wrote it, from its streamed pieces. */
export interface GeneratedReply {
  reasoning: string;
  content: string;
  calls: { name: string; arguments: string }[];
}

/**
 * The text the model generated after the generation prompt, written the way
 * this template renders an assistant message, so a reply sent back in the
 * history matches it up to where re-rendering differs: the reasoning, which
 * the history never carries.
 */
export function generatedText(
  reply: GeneratedReply,
  thinking: boolean,
): string {
  let text = thinking
    ? `${reply.reasoning}\n</think>\n\n`
    : reply.reasoning === ""
    ? ""
    : `<think>\n${reply.reasoning}\n</think>\n\n`;
  text += reply.content;
  for (const call of reply.calls) {
    text += `\n<tool_call>\n${
      JSON.stringify({ name: call.name, arguments: call.arguments })
    }\n</tool_call>`;
  }
  return text;
}

/** Tokens a picture takes in the fake's prompts: its media marker, repeated. */
export const FAKE_IMAGE_TOKENS = 256;

/** A message's content as the template renders it: a picture as its media tokens, where it stands among the text. */
function contentOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: { type?: unknown; text?: unknown }) =>
    part?.type === "text"
      ? String(part.text ?? "")
      : part?.type === "image_url"
      ? "<__media__>".repeat(FAKE_IMAGE_TOKENS)
      : ""
  ).join("");
}

/** The rendered prompt, one part per message (the system one with the tools). */
function renderParts(body: Record<string, unknown>): string[] {
  const messages = Array.isArray(body.messages)
    ? body.messages as Message[]
    : [];
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const out: string[] = [];
  let system = "";
  let rest = messages;
  if (messages[0]?.role === "system") {
    system = String(messages[0].content ?? "");
    rest = messages.slice(1);
  }
  if (tools.length > 0) {
    system += "\n\n# Tools\n\nYou may call one or more functions to assist " +
      "with the user query.\n\n<tools>\n" +
      tools.map((tool) => JSON.stringify(tool)).join("\n") +
      "\n</tools>\n\nFor each call, return the function name and arguments " +
      "within <tool_call></tool_call> tags.";
  }
  if (system !== "") out.push(`<|im_start|>system\n${system}<|im_end|>\n`);
  // As Qwen3.5's template: an assistant message after the last question
  // (this turn's tool rounds) is rendered with its think block, empty when
  // its reasoning was not sent back; one before it, without.
  const lastQuestion = rest.findLastIndex((message) => message.role === "user");
  for (const [index, message] of rest.entries()) {
    const content = contentOf(message.content);
    if (message.role === "tool") {
      out.push(
        `<|im_start|>user\n<tool_response>\n${content}\n</tool_response><|im_end|>\n`,
      );
      continue;
    }
    const thinkBlock = message.role === "assistant" && index > lastQuestion
      ? "<think>\n\n</think>\n\n"
      : "";
    let part = `<|im_start|>${String(message.role)}\n${thinkBlock}${content}`;
    for (const call of message.tool_calls ?? []) {
      part += `\n<tool_call>\n${
        JSON.stringify({
          name: call.function?.name,
          arguments: call.function?.arguments,
        })
      }\n</tool_call>`;
    }
    out.push(part + "<|im_end|>\n");
  }
  if (body.add_generation_prompt !== false) {
    out.push(
      // With thinking off the template writes an empty think block itself.
      thinkingPrompt(body)
        ? "<|im_start|>assistant\n<think>\n"
        : "<|im_start|>assistant\n<think>\n\n</think>\n\n",
    );
  }
  return out;
}

/** The 400 llama-server answers a prompt longer than its context, as captured. */
export function contextErrorBody(promptTokens: number, nCtx: number): string {
  return JSON.stringify({
    error: {
      code: 400,
      message:
        `request (${promptTokens} tokens) exceeds the available context size (${nCtx} tokens), try increasing it`,
      type: "exceed_context_size_error",
      n_prompt_tokens: promptTokens,
      n_ctx: nCtx,
    },
  });
}

/** `POST /tokenize`: `{tokens}`, with pieces when asked. */
export function tokenizeAnswer(
  body: unknown,
): { status: number; body: unknown } {
  if (!isRecord(body) || typeof body.content !== "string") {
    return {
      status: 400,
      body: {
        error: {
          code: 400,
          message: '"content" must be provided',
          type: "invalid_request_error",
        },
      },
    };
  }
  const pieces = tokenPieces(body.content);
  // Ids are made up; only their number matters to a client.
  const ids = pieces.map((piece) => {
    let hash = 0;
    for (const char of piece) hash = (hash * 31 + char.codePointAt(0)!) % 50000;
    return hash;
  });
  return {
    status: 200,
    body: {
      tokens: body.with_pieces === true
        ? ids.map((id, i) => ({ id, piece: pieces[i] }))
        : ids,
    },
  };
}

/** `POST /apply-template`: `{prompt}`, the rendered template. */
export function applyTemplateAnswer(
  body: unknown,
): { status: number; body: unknown } {
  if (!isRecord(body) || !Array.isArray(body.messages)) {
    return {
      status: 400,
      body: {
        error: {
          code: 400,
          message: '"messages" must be provided',
          type: "invalid_request_error",
        },
      },
    };
  }
  return { status: 200, body: { prompt: renderPrompt(body) } };
}
