/**
 * Every key of config.toml, declared once: its type, default and limits as a
 * zod schema, and what its error says the value must be. `Config` and
 * `McpServerConfig` are inferred from here; config.ts and mcp_config.ts parse
 * the file against these declarations.
 */
import { z } from "zod";
import type { Paths } from "./paths.ts";

/** How an error may show the value it refuses (the rule is in config.ts, `describeRefused`). */
export type Shown =
  /** The value itself: the key's right values are numbers, booleans or fixed words, so a string there is a slip, not a secret. */
  | "value"
  /** A URL without its userinfo, query and fragment. */
  | "url"
  /** Its kind and length only. */
  | "kind";

/** One top-level key: its schema (type, default, limits) and the words of its error. */
export interface KeyDeclaration<S extends z.ZodType = z.ZodType> {
  schema: S;
  /** The error says the key "must be <expected>, got <the value>" (a refinement may name a narrower rule). */
  expected: string;
  shown: Shown;
}

/** One field of an `[mcp.NAME]` table: its schema and the problem its error names. */
export interface FieldDeclaration<S extends z.ZodType = z.ZodType> {
  schema: S;
  /** The whole problem, e.g. `must be true or false`; the value is never quoted. */
  problem: string;
}

/** Longest timer a setTimeout accepts, in whole seconds. */
const MAX_SECONDS = 2_147_483;

/** The built-in system prompt; the daemon stamps the date and model on it. */
export const DEFAULT_SYSTEM_PROMPT = [
  "You are a helpful assistant running locally on the user's desktop.",
  "Answer accurately and directly, in the language the user writes in.",
  "Match the length of the answer to the question: brief for simple ones, thorough for complex ones.",
  "Format with Markdown where it helps reading: short paragraphs, lists, tables, and fenced code blocks with a language tag.",
  "When a tool can give a current or exact answer (the date and time, the weather, a fact to look up), call it instead of guessing, and say what the answer rests on.",
  "If you are unsure or lack the information, say so plainly rather than inventing details.",
].join(" ");

/** The browser canvas's port unless the config names another. */
export const DEFAULT_WEB_PORT = 8765;

const SECONDS = `a number of seconds above 0 and at most ${MAX_SECONDS}`;
const BASE_URL =
  "an http(s) base URL such as http://127.0.0.1:8080 (no path, query or credentials)";

function key<S extends z.ZodType>(
  schema: S,
  expected: string,
  shown: Shown,
): KeyDeclaration<S> {
  return { schema, expected, shown };
}

function field<S extends z.ZodType>(
  schema: S,
  problem: string,
): FieldDeclaration<S> {
  return { schema, problem };
}

const seconds = () => z.number().gt(0).lte(MAX_SECONDS);

/** The text as an http(s) URL; undefined when it is none. */
export function httpUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  return url.protocol === "http:" || url.protocol === "https:"
    ? url
    : undefined;
}

/** The URL as `scheme://host[:port]`, or undefined when it is no base URL. */
function baseUrl(text: string): string | undefined {
  const url = httpUrl(text);
  if (url === undefined) return undefined;
  if (url.pathname !== "/" || url.search !== "" || url.hash !== "") {
    return undefined;
  }
  if (url.username !== "" || url.password !== "") return undefined;
  return `${url.protocol}//${url.host}`;
}

/** A base URL key, kept as `scheme://host[:port]`; with `optional`, "" means none. */
function url(fallback: string, optional = false) {
  const none = optional ? ', or "" for none' : "";
  const ok = (text: string) =>
    (optional && text === "") || baseUrl(text) !== undefined;
  return key(
    z.string()
      .refine(ok, { error: `${BASE_URL}${none}` })
      .transform((text) => baseUrl(text) ?? "")
      .default(fallback),
    `an http(s) URL string${none}`,
    "url",
  );
}

/** argv of a command (no shell): at least the program, no empty word. */
const argv = (fallback: string[]) =>
  z.array(z.string().min(1)).min(1).default(fallback);

/** argv of a command (no shell), or [] for none. */
const argvOrNone = (fallback: string[]) =>
  z.array(z.string())
    .refine((words) => words.length === 0 || words[0] !== "")
    .default(fallback);

/** The zod object of a table whose fields are declared one by one. */
export function objectOf<T extends Record<string, { schema: z.ZodType }>>(
  fields: T,
): z.ZodObject<{ [K in keyof T]: T[K]["schema"] }> {
  const shape = Object.fromEntries(
    Object.entries(fields).map(([name, { schema }]) => [name, schema]),
  ) as { [K in keyof T]: T[K]["schema"] };
  return z.object(shape);
}

/** The fields of one `[mcp.NAME]` table: an MCP server started over stdio. */
export const MCP_SERVER_FIELDS = {
  /** argv; command[0] is resolved like a tool's executable (relative to the config dir). */
  command: field(
    z.array(z.string()).min(1).refine((words) => words[0] !== ""),
    'must be a non-empty array of strings, e.g. ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]',
  ),
  /** Added to the environment the server inherits, never replacing it. */
  env: field(
    z.record(z.string(), z.string()).default(() => ({})),
    'must be a table of strings, e.g. {KEY = "value"}',
  ),
  /** Whether each of its calls waits for the user's approval. */
  confirm: field(z.boolean().default(true), "must be true or false"),
  /** Seconds for one request to it; null means `tool_timeout`. */
  timeout: field(seconds().nullable().default(null), `must be ${SECONDS}`),
};

/** One `[mcp.NAME]` table, its fields as declared above. */
export const MCP_SERVER = objectOf(MCP_SERVER_FIELDS);

/** One MCP server as the config declares it. */
export type McpServerConfig = z.output<typeof MCP_SERVER>;

const INT32_MAX = 2_147_483_647;
const TOKEN_LIMIT = "an integer of tokens, or -1 for no limit";
const COUNT = "an integer, 0 or more";
const anyNumber = () => key(z.number(), "a number", "value");
const fraction = () =>
  key(z.number().min(0).max(1), "a number from 0 to 1", "value");
const flag = () => key(z.boolean(), "true or false", "value");
const count = (min: number, expected: string) =>
  key(z.int().min(min).max(INT32_MAX), expected, "value");
const words = () => z.union([z.string(), z.array(z.string())]);
const table = () => key(z.record(z.string(), z.unknown()), "a table", "kind");
/** A token's bias: a number, or false to ban the token. */
const bias = z.union([z.number(), z.literal(false)]);

/**
 * The `[request]` fields llama-server reads with a type of its own, each
 * declared like a top-level key: a wrong type there fails every question with
 * llama-server's 400, so the file is refused instead. Fields not listed here
 * are sent as written.
 */
export const REQUEST_FIELDS = {
  temperature: key(z.number().min(0), "a number, 0 or more", "value"),
  top_p: fraction(),
  min_p: fraction(),
  top_k: key(z.int(), "an integer (0 turns it off)", "value"),
  typical_p: anyNumber(),
  top_n_sigma: anyNumber(),
  xtc_probability: fraction(),
  xtc_threshold: fraction(),
  dynatemp_range: anyNumber(),
  dynatemp_exponent: anyNumber(),
  n_predict: count(-1, TOKEN_LIMIT),
  max_tokens: count(-1, TOKEN_LIMIT),
  max_completion_tokens: count(-1, TOKEN_LIMIT),
  n_keep: count(-1, "an integer of tokens, or -1 to keep the whole prompt"),
  n_cache_reuse: count(0, "an integer of tokens, 0 or more"),
  n_probs: count(0, COUNT),
  min_keep: count(0, COUNT),
  seed: key(
    z.int().min(-1).max(4_294_967_295),
    "an integer from 0 to 4294967295, or -1 for a random seed",
    "value",
  ),
  repeat_penalty: anyNumber(),
  repeat_last_n: count(0, COUNT),
  presence_penalty: anyNumber(),
  frequency_penalty: anyNumber(),
  dry_multiplier: anyNumber(),
  dry_base: anyNumber(),
  dry_allowed_length: count(0, COUNT),
  dry_penalty_last_n: count(0, COUNT),
  dry_sequence_breakers: key(
    z.array(z.string()).min(1),
    "a non-empty array of strings",
    "kind",
  ),
  mirostat: key(z.literal([0, 1, 2]), "0, 1 or 2", "value"),
  mirostat_tau: anyNumber(),
  mirostat_eta: anyNumber(),
  stop: key(words(), "a string or an array of strings", "kind"),
  samplers: key(
    words(),
    "an array of sampler names, or a string of sampler letters",
    "kind",
  ),
  logit_bias: key(
    z.union([
      z.array(z.tuple([z.union([z.int(), z.string()]), bias])),
      z.record(z.string(), bias),
    ]),
    "an array of [token, bias] pairs or a table of token = bias (a bias is a number, or false to ban the token)",
    "kind",
  ),
  grammar: key(z.string(), "a string (a GBNF grammar)", "kind"),
  json_schema: table(),
  response_format: key(
    z.looseObject({ type: z.enum(["text", "json_object", "json_schema"]) }),
    'a table whose type is "text", "json_object" or "json_schema"',
    "kind",
  ),
  chat_template_kwargs: table(),
  reasoning_format: key(z.string(), "a string", "value"),
  reasoning_effort: key(z.string(), "a string", "value"),
  cache_prompt: flag(),
  ignore_eos: flag(),
  return_tokens: flag(),
  timings_per_token: flag(),
  parse_tool_calls: flag(),
  parallel_tool_calls: flag(),
} satisfies Record<string, KeyDeclaration>;

/** Every top-level key; `tools_dirs`' default depends on the paths. */
export function configKeys(paths: Paths) {
  return {
    /** llama-server's or the router's base URL. */
    llm_url: url("http://127.0.0.1:8080"),
    /** With a router: the model to prefer when several are loaded. */
    model: key(z.string().default(""), "a string", "kind"),
    thinking: key(z.boolean().default(true), "a boolean", "value"),
    system_prompt: key(
      z.string().default(DEFAULT_SYSTEM_PROMPT),
      "a string",
      "kind",
    ),
    history_turns: key(
      z.int().min(0).default(10),
      "a non-negative integer",
      "value",
    ),
    /** Tokens kept free for the reply when `[request]` sets no `max_tokens`. */
    reply_reserve: key(
      z.int().min(1).default(1024),
      "a positive integer of tokens",
      "value",
    ),
    max_tool_rounds: key(
      z.int().min(0).default(8),
      "a non-negative integer",
      "value",
    ),
    tool_timeout: key(seconds().default(30), SECONDS, "value"),
    tool_output_limit: key(
      z.int().min(256).default(16384),
      "an integer of bytes >= 256",
      "value",
    ),
    /** Kill a timed-out tool's whole process group through coreutils `timeout` (widens --allow-run). */
    tool_group_kill: key(z.boolean().default(false), "a boolean", "value"),
    stall_timeout: key(seconds().default(180), SECONDS, "value"),
    max_clients: key(z.int().min(1).default(32), "an integer >= 1", "value"),
    /** After a conversation's first reply, ask the model for a short title. */
    auto_title: key(z.boolean().default(false), "a boolean", "value"),
    /** Seconds between probes of llama-server while a client is connected; 0 turns polling off. */
    backend_poll: key(
      z.union([z.literal(0), seconds()]).default(5),
      `a number of seconds from 0 (off) to ${MAX_SECONDS}`,
      "value",
    ),
    /** Where tool files are read; config.ts resolves the user's entries against the config dir. */
    tools_dirs: key(
      z.array(z.string().min(1)).default(() => [
        paths.userToolsDir,
        paths.bundledToolsDir,
      ]),
      "an array of non-empty strings",
      "kind",
    ),
    /** Tools whose every call waits for the user's approval, besides those whose file says `confirm = true`. */
    confirm_tools: key(
      z.array(z.string().min(1)).default([]),
      "an array of tool names",
      "kind",
    ),
    /** Seconds a call waits for approval before it counts as declined. */
    confirm_timeout: key(seconds().default(120), SECONDS, "value"),
    /** Loopback port of the browser canvas (`deno task web`); 0 picks a free one. */
    web_port: key(
      z.int().min(0).max(65535).default(DEFAULT_WEB_PORT),
      "a port number from 0 to 65535",
      "value",
    ),
    /** `n_cache_reuse` sent with every chat request (the server shifts kept turns' cache instead of re-reading them); 0 leaves it out; a `[request]` value wins. */
    cache_reuse: key(
      z.int().min(0).default(256),
      "a non-negative integer of tokens (0 leaves n_cache_reuse out)",
      "value",
    ),
    /** Fold the turns that leave the history window into the conversation's running summary. */
    compact: key(z.boolean().default(true), "a boolean", "value"),
    /** Most tokens a summary request may produce. */
    summary_tokens: key(
      z.int().min(1).default(400),
      "a positive integer of tokens",
      "value",
    ),
    /** Voice client: argv that records WAV on stdout until it is ended. */
    record_command: key(
      argv("arecord -q -f S16_LE -r 16000 -c 1 -t wav".split(" ")),
      "a non-empty array of non-empty strings (argv, no shell)",
      "kind",
    ),
    /** Voice client: an OpenAI-compatible transcription server's base URL; "" for none. */
    stt_url: url("", true),
    /** Voice client: argv that reads WAV on stdin and writes the text on stdout; [] for none. */
    stt_command: key(
      argvOrNone([]),
      "an array of strings (the program first), or [] for none",
      "kind",
    ),
    /** Voice client: the `model` of a transcription request to `stt_url`. */
    stt_model: key(z.string().default("whisper-1"), "a string", "kind"),
    /** Voice client: argv that reads text on stdin and writes WAV on stdout; [] for none. */
    tts_command: key(
      argvOrNone(["espeak-ng", "--stdout"]),
      "an array of strings (the program first), or [] for none",
      "kind",
    ),
    /** Voice client: an OpenAI-compatible speech server's base URL; "" for none. */
    tts_url: url("", true),
    /** Voice client: the `model` of a speech request to `tts_url`. */
    tts_model: key(z.string().default("tts-1"), "a string", "kind"),
    /** Voice client: the `voice` of a speech request to `tts_url`. */
    tts_voice: key(z.string().default("alloy"), "a string", "kind"),
    /** Voice client: argv that plays WAV from stdin. */
    play_command: key(
      argv(["aplay", "-q"]),
      "a non-empty array of non-empty strings (argv, no shell)",
      "kind",
    ),
    /** Voice client: speak the replies to its `own` questions, or `all` replies in the current conversation. */
    speak: key(
      z.enum(["own", "all"]).default("own"),
      '"own" or "all"',
      "value",
    ),
    /** Facts about the user: `ask` proposes them for the user's yes and carries the kept ones in every new conversation; `off` neither proposes nor carries any. */
    memory: key(
      z.enum(["ask", "off"]).default("ask"),
      '"ask" or "off"',
      "value",
    ),
    /** Seconds a conversation stays idle before its new turns are read for facts to propose. */
    memory_idle: key(seconds().default(120), SECONDS, "value"),
    /** Most tokens of memories a conversation's requests carry, newest first. */
    memory_tokens: key(
      z.int().min(0).default(300),
      "a non-negative integer of tokens",
      "value",
    ),
    /** Base URL of an OpenAI-compatible embeddings endpoint (a llama-server started with --embeddings); "" keeps search by words alone. */
    embed_url: url("", true),
    /** The `model` of an embeddings request, when the server needs one. */
    embed_model: key(z.string().default(""), "a string", "kind"),
    /** Offer the model a search_history tool over other conversations. */
    recall: key(z.boolean().default(true), "a boolean", "value"),
    /** Document converters: a mime type to an argv that reads the file on stdin and writes its text on stdout ([] for none); one whose program is not found is left out. */
    convert: key(
      z.record(z.string(), argvOrNone([])).default(() => ({
        "application/pdf": ["pdftotext", "-layout", "-", "-"],
      })),
      "a table of mime types to argv arrays (the program first), or [] for none",
      "kind",
    ),
    /** Extra fields merged into every chat request body; config.ts checks the fields of REQUEST_FIELDS, merges and warns. */
    request: key(
      z.record(z.string(), z.unknown()).default(() => ({})),
      "a table",
      "kind",
    ),
    /** MCP servers by name, from the `[mcp.NAME]` tables (mcp_config.ts checks each field). */
    mcp: key(
      z.record(z.string(), MCP_SERVER).default(() => ({})),
      "a table of [mcp.NAME] tables",
      "kind",
    ),
  };
}

/** The declarations, as {@link configKeys} makes them. */
export type ConfigKeys = ReturnType<typeof configKeys>;

/** The whole config as one zod object (its `parse({})` gives the defaults). */
export function configSchema(paths: Paths): z.ZodObject<
  { [K in keyof ConfigKeys]: ConfigKeys[K]["schema"] }
> {
  return objectOf(configKeys(paths));
}

/** The daemon's settings, after defaults and the user's file are merged. */
export type Config = z.output<ReturnType<typeof configSchema>>;
