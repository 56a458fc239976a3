/**
 * The TOML config: built-in defaults deep-merged with the user's file, each
 * key checked against its declaration in config_schema.ts, with errors that
 * name the file, line and key and never quote a secret.
 */

import { isAbsolute, join } from "node:path";
import { parse, TomlDate, TomlError } from "smol-toml";
import { AssistantError, withSafeMessage } from "./errors.ts";
import { clean, type Env, type Paths, readEnv } from "./paths.ts";
import { parseMcpTable } from "./mcp_config.ts";
import {
  type Config,
  type ConfigKeys,
  configKeys,
  configSchema,
  objectOf,
  type Shown,
} from "./config_schema.ts";

export type { Config, McpServerConfig } from "./config_schema.ts";
export { DEFAULT_SYSTEM_PROMPT, DEFAULT_WEB_PORT } from "./config_schema.ts";

/** Built-in defaults (tools_dirs filled from paths). */
export function defaultConfig(paths: Paths): Config {
  return configSchema(paths).parse({});
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

/**
 * How an error shows the value it refuses, so that it never prints a secret:
 * - numbers, booleans and dates whole;
 * - a string whole (its first 40 characters) only for a key whose right
 *   values are numbers, booleans or fixed words (`Shown` "value"), where a
 *   string is a slip rather than a secret;
 * - for a URL key, an http(s) URL without its credentials: userinfo, query
 *   and fragment each become "…" (any other string there: its length only);
 * - any other string by its length only;
 * - arrays and tables by their kind, so no command word, `[request]` field or
 *   `[mcp.NAME]` env value is ever quoted (mcp_config.ts quotes no value).
 */
function describeRefused(value: unknown, shown: Shown): string {
  if (typeof value === "string") {
    const text = shown === "value"
      ? value
      : shown === "url"
      ? urlWithoutSecrets(value)
      : undefined;
    if (text === undefined) {
      return `a string of ${[...value].length} characters`;
    }
    const cut = text.length > 40 ? `${text.slice(0, 40)}…` : text;
    return `string ${JSON.stringify(cut)}`;
  }
  if (typeof value === "number") return `number ${value}`;
  if (typeof value === "boolean") return `boolean ${value}`;
  if (value instanceof TomlDate) return `date ${value.toISOString()}`;
  if (Array.isArray(value)) return `an array`;
  return "a table";
}

/** An http(s) URL with "…" for its userinfo, query and fragment; undefined for anything else. */
function urlWithoutSecrets(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  const userinfo = url.username !== "" || url.password !== "" ? "…@" : "";
  return `${url.protocol}//${userinfo}${url.host}${url.pathname}${
    url.search === "" ? "" : "?…"
  }${url.hash === "" ? "" : "#…"}`;
}

/**
 * Parses the TOML text. smol-toml's error message quotes the file's lines
 * around the fault (an `[mcp.NAME] env` secret among them): only its position
 * and its reason (a fixed phrase) are kept, and the error is not attached as
 * the cause, which the log at exit would print.
 */
function parseToml(text: string, file: string): Table {
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof TomlError) {
      const reason = error.message.replace(/^Invalid TOML document: /, "")
        .split("\n")[0];
      throw withSafeMessage(
        new SyntaxError(`${file}:${error.line}:${error.column}: ${reason}`),
      );
    }
    throw error;
  }
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

/** Parses TOML text: SyntaxError naming file:line:col; TypeError naming file, key and the expected type. */
export function parseConfig(
  text: string,
  file: string,
  paths: Paths,
  env: Env = readEnv,
): LoadedConfig {
  const doc = parseToml(text, file);
  const complain = (key: string, problem: string): never => {
    const line = lineOf(text, key);
    const where = line === undefined ? file : `${file}:${line}`;
    throw withSafeMessage(new TypeError(`${where}: key "${key}" ${problem}`));
  };

  const keys = configKeys(paths);
  const config: Config = objectOf(keys).parse({});
  const warnings: string[] = [];
  for (const [key, value] of Object.entries(doc)) {
    if (!Object.hasOwn(keys, key)) {
      warnings.push(`unknown key ${JSON.stringify(key)} in ${file}`);
      continue;
    }
    const name = key as keyof ConfigKeys;
    if (name === "mcp") {
      const parsed = parseMcpTable(value, complain);
      config.mcp = parsed.servers;
      warnings.push(
        ...parsed.warnings.map((warning) => `${warning} in ${file}`),
      );
      continue;
    }
    const { schema, expected, shown } = keys[name];
    // Issues without a message of their own (type, limits) say `expected`.
    const parsed = schema.safeParse(value, { error: () => expected });
    if (!parsed.success) {
      complain(
        name,
        `must be ${parsed.error.issues[0]?.message ?? expected}, got ${
          describeRefused(value, shown)
        }`,
      );
    }
    switch (name) {
      case "request": {
        const request = value as Table;
        for (const field of Object.keys(request)) {
          if (DAEMON_REQUEST_KEYS.has(field)) {
            warnings.push(
              `key "request.${field}" in ${file} is ignored: the daemon sets it`,
            );
          }
        }
        // The file's own table, not zod's copy, so every key stays plain data.
        config.request = mergeTables(config.request, request);
        break;
      }
      case "tools_dirs":
        config.tools_dirs = toolsDirs(
          value as string[],
          paths.configDir,
          env,
          () =>
            complain(
              name,
              'has a "~" entry, which needs HOME set to an absolute path',
            ),
        );
        break;
      default:
        put(config, name, parsed.data);
    }
  }
  return { config, warnings, file };
}

/** Resolves entries against the config dir and expands `~/`, keeping order. */
function toolsDirs(
  entries: string[],
  configDir: string,
  env: Env,
  noHome: () => never,
): string[] {
  const dirs = entries.map((entry) => {
    if (entry === "~" || entry.startsWith("~/")) {
      const home = env("HOME");
      if (home === undefined || !isAbsolute(home)) return noHome();
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
    throw withSafeMessage(
      new SyntaxError(`${file}: not valid UTF-8: save it as UTF-8`, {
        cause: error,
      }),
    );
  }
  return parseConfig(text, file, paths, env);
}
