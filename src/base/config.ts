/**
 * The TOML config: built-in defaults deep-merged with the user's file, then
 * validated, with errors that name the file, line and key.
 */

import { isAbsolute, join } from "node:path";
import { parse, TomlDate, TomlError } from "smol-toml";
import { AssistantError } from "./errors.ts";
import { clean, type Env, type Paths, readEnv } from "./paths.ts";
import { type McpServerConfig, parseMcpTable } from "./mcp_config.ts";

export type { McpServerConfig } from "./mcp_config.ts";

/** The daemon's settings, after defaults and the user's file are merged. */
export interface Config {
  llm_url: string;
  model: string;
  thinking: boolean;
  system_prompt: string;
  history_turns: number;
  /** Tokens kept free for the reply when `[request]` sets no `max_tokens`. */
  reply_reserve: number;
  max_tool_rounds: number;
  tool_timeout: number;
  tool_output_limit: number;
  /** Kill a timed-out tool's whole process group through coreutils `timeout` (widens --allow-run). */
  tool_group_kill: boolean;
  stall_timeout: number;
  max_clients: number;
  /** After a conversation's first reply, ask the model for a short title. */
  auto_title: boolean;
  /** Seconds between probes of llama-server while a client is connected; 0 turns polling off. */
  backend_poll: number;
  tools_dirs: string[];
  /** Tools whose every call waits for the user's approval, besides those whose file says `confirm = true`. */
  confirm_tools: string[];
  /** Seconds a call waits for approval before it counts as declined. */
  confirm_timeout: number;
  /** Loopback port of the browser canvas (`deno task web`); 0 picks a free one. */
  web_port: number;
  request: Record<string, unknown>;
  /** MCP servers by name, from the `[mcp.NAME]` tables. */
  mcp: Record<string, McpServerConfig>;
}

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

/** Built-in defaults (tools_dirs filled from paths). */
export function defaultConfig(paths: Paths): Config {
  return {
    llm_url: "http://127.0.0.1:8080",
    model: "",
    thinking: true,
    system_prompt: DEFAULT_SYSTEM_PROMPT,
    history_turns: 10,
    reply_reserve: 1024,
    max_tool_rounds: 8,
    tool_timeout: 30,
    tool_output_limit: 16384,
    tool_group_kill: false,
    stall_timeout: 180,
    max_clients: 32,
    auto_title: false,
    backend_poll: 5,
    tools_dirs: [paths.userToolsDir, paths.bundledToolsDir],
    confirm_tools: [],
    confirm_timeout: 120,
    web_port: DEFAULT_WEB_PORT,
    request: {},
    mcp: {},
  };
}

/** The result of loading the config: the merged settings and what to warn about. */
export interface LoadedConfig {
  config: Config;
  warnings: string[];
  file: string | null;
}

/** Request body fields the daemon always sets itself, so the user's are ignored. */
const DAEMON_REQUEST_KEYS = new Set([
  "model",
  "messages",
  "stream",
  "stream_options",
  "tools",
]);

/** Longest timer a setTimeout accepts, in whole seconds. */
const MAX_SECONDS = 2_147_483;

type Table = Record<string, unknown>;

/** Whether a TOML value is a table (not an array or a date). */
function isTable(value: unknown): value is Table {
  return typeof value === "object" && value !== null &&
    !Array.isArray(value) && !(value instanceof Date);
}

/** Sets an own property, so a key such as `__proto__` stays plain data. */
function put(target: Table, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** Deep merge: tables merge key by key, arrays and scalars from `over` replace. */
export function mergeTables(base: Table, over: Table): Table {
  const out: Table = {};
  for (const [key, value] of Object.entries(base)) put(out, key, value);
  for (const [key, value] of Object.entries(over)) {
    const prior = Object.hasOwn(out, key) ? out[key] : undefined;
    put(
      out,
      key,
      isTable(prior) && isTable(value)
        ? mergeTables(prior, value)
        : isTable(value)
        ? mergeTables({}, value)
        : value,
    );
  }
  return out;
}

function describe(value: unknown): string {
  if (typeof value === "string") {
    const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
    return `string ${JSON.stringify(shown)}`;
  }
  if (typeof value === "number") return `number ${value}`;
  if (typeof value === "boolean") return `boolean ${value}`;
  if (value instanceof TomlDate) return `date ${value.toISOString()}`;
  if (Array.isArray(value)) return `an array`;
  return "a table";
}

/** The line of `key =` (a dotted key: inside its `[table]`; a plain one: before the first table header), when found. */
function lineOf(text: string, dotted: string): number | undefined {
  const parts = dotted.split(".");
  const key = (parts.pop() ?? "").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const table = parts.join(".");
  const pattern = new RegExp(`^\\s*(?:${key}|"${key}"|'${key}')\\s*=`);
  let current = "";
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    const header = line.match(/^\s*\[\s*([^\]]*?)\s*\]/);
    if (header) current = header[1] ?? "";
    else if (current === table && pattern.test(line)) return index + 1;
  }
  return undefined;
}

interface Rule {
  expected: string;
  ok: (value: unknown) => boolean;
}

const isInt = (value: unknown): value is number => Number.isSafeInteger(value);
const isSeconds = (value: unknown): boolean =>
  typeof value === "number" && value > 0 && value <= MAX_SECONDS;

const RULES: Record<Exclude<keyof Config, "request" | "mcp">, Rule> = {
  llm_url: {
    expected: "an http(s) URL string",
    ok: (v) => typeof v === "string",
  },
  model: { expected: "a string", ok: (v) => typeof v === "string" },
  thinking: { expected: "a boolean", ok: (v) => typeof v === "boolean" },
  system_prompt: { expected: "a string", ok: (v) => typeof v === "string" },
  history_turns: {
    expected: "a non-negative integer",
    ok: (v) => isInt(v) && v >= 0,
  },
  reply_reserve: {
    expected: "a positive integer of tokens",
    ok: (v) => isInt(v) && v >= 1,
  },
  max_tool_rounds: {
    expected: "a non-negative integer",
    ok: (v) => isInt(v) && v >= 0,
  },
  tool_timeout: {
    expected: `a number of seconds above 0 and at most ${MAX_SECONDS}`,
    ok: isSeconds,
  },
  tool_output_limit: {
    expected: "an integer of bytes >= 256",
    ok: (v) => isInt(v) && v >= 256,
  },
  tool_group_kill: {
    expected: "a boolean",
    ok: (v) => typeof v === "boolean",
  },
  stall_timeout: {
    expected: `a number of seconds above 0 and at most ${MAX_SECONDS}`,
    ok: isSeconds,
  },
  max_clients: { expected: "an integer >= 1", ok: (v) => isInt(v) && v >= 1 },
  auto_title: { expected: "a boolean", ok: (v) => typeof v === "boolean" },
  backend_poll: {
    expected: `a number of seconds from 0 (off) to ${MAX_SECONDS}`,
    ok: (v) => v === 0 || isSeconds(v),
  },
  tools_dirs: {
    expected: "an array of non-empty strings",
    ok: (v) =>
      Array.isArray(v) &&
      v.every((entry) => typeof entry === "string" && entry !== ""),
  },
  confirm_tools: {
    expected: "an array of tool names",
    ok: (v) =>
      Array.isArray(v) &&
      v.every((entry) => typeof entry === "string" && entry !== ""),
  },
  confirm_timeout: {
    expected: `a number of seconds above 0 and at most ${MAX_SECONDS}`,
    ok: isSeconds,
  },
  web_port: {
    expected: "a port number from 0 to 65535",
    ok: (v) => isInt(v) && v >= 0 && v <= 65535,
  },
};

/** Parses TOML text: SyntaxError naming file:line:col; TypeError naming file, key and the expected type. */
export function parseConfig(
  text: string,
  file: string,
  paths: Paths,
  env: Env = readEnv,
): LoadedConfig {
  let doc: Table;
  try {
    doc = parse(text);
  } catch (error) {
    if (error instanceof TomlError) {
      const what = error.message.replace(/^Invalid TOML document: /, "")
        .split("\n")[0];
      throw new SyntaxError(
        `${file}:${error.line}:${error.column}: ${what}`,
        { cause: error },
      );
    }
    throw error;
  }
  const complain = (key: string, problem: string): never => {
    const line = lineOf(text, key);
    const where = line === undefined ? file : `${file}:${line}`;
    throw new TypeError(`${where}: key "${key}" ${problem}`);
  };
  const fail = (key: string, expected: string, value: unknown): never =>
    complain(key, `must be ${expected}, got ${describe(value)}`);

  const config = defaultConfig(paths);
  const warnings: string[] = [];
  for (const [key, value] of Object.entries(doc)) {
    if (key === "request") {
      if (!isTable(value)) fail(key, "a table", value);
      const request = value as Table;
      for (const field of Object.keys(request)) {
        if (DAEMON_REQUEST_KEYS.has(field)) {
          warnings.push(
            `key "request.${field}" in ${file} is ignored: the daemon sets it`,
          );
        }
      }
      config.request = mergeTables(config.request, request);
      continue;
    }
    if (key === "mcp") {
      const parsed = parseMcpTable(value, MAX_SECONDS, complain);
      config.mcp = parsed.servers;
      warnings.push(
        ...parsed.warnings.map((warning) => `${warning} in ${file}`),
      );
      continue;
    }
    if (!Object.hasOwn(RULES, key)) {
      warnings.push(`unknown key ${JSON.stringify(key)} in ${file}`);
      continue;
    }
    const name = key as keyof typeof RULES;
    const rule = RULES[name];
    if (!rule.ok(value)) fail(name, rule.expected, value);
    switch (name) {
      case "llm_url":
        config.llm_url = baseUrl(value as string) ??
          fail(
            name,
            "an http(s) base URL such as http://127.0.0.1:8080 (no path, query or credentials)",
            value,
          );
        break;
      case "tools_dirs":
        config.tools_dirs = toolsDirs(
          value as string[],
          paths.configDir,
          env,
          (entry) =>
            complain(
              name,
              `has ${
                JSON.stringify(entry)
              }, which needs HOME set to an absolute path`,
            ),
        );
        break;
      default:
        (config as unknown as Table)[name] = value;
    }
  }
  return { config, warnings, file };
}

/** The URL as `scheme://host[:port]`, or undefined when it is no base URL. */
function baseUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  if (url.pathname !== "/" || url.search !== "" || url.hash !== "") {
    return undefined;
  }
  if (url.username !== "" || url.password !== "") return undefined;
  return `${url.protocol}//${url.host}`;
}

/** Resolves entries against the config dir and expands `~/`, keeping order. */
function toolsDirs(
  entries: string[],
  configDir: string,
  env: Env,
  noHome: (entry: string) => never,
): string[] {
  const dirs = entries.map((entry) => {
    if (entry === "~" || entry.startsWith("~/")) {
      const home = env("HOME");
      if (home === undefined || !isAbsolute(home)) return noHome(entry);
      return clean(join(home, entry.slice(1)));
    }
    return isAbsolute(entry) ? clean(entry) : join(configDir, entry);
  });
  return [...new Set(dirs)];
}

/** Reads the config file (missing file = defaults) and parses it. */
export async function loadConfig(
  paths: Paths,
  env: Env = readEnv,
): Promise<LoadedConfig> {
  const file = paths.configFile;
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { config: defaultConfig(paths), warnings: [], file: null };
    }
    throw new AssistantError(
      `Cannot read the config file ${file}: make it a readable file or remove it`,
      { cause: error },
    );
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    throw new SyntaxError(`${file}: not valid UTF-8: save it as UTF-8`, {
      cause: error,
    });
  }
  return parseConfig(text, file, paths, env);
}
