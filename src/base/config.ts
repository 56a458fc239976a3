/**
 * The TOML config: built-in defaults deep-merged with the user's file, each
 * key checked against its declaration in config_schema.ts, with errors that
 * name the file, line and key and never quote a secret.
 */

import { isAbsolute, join } from "node:path";
import { parse, TomlError } from "smol-toml";
import { AssistantError } from "./errors.ts";
import { didYouMean } from "./config_hints.ts";
import { checked, ConfigProblems, refusedConfig } from "./config_problems.ts";
import { clean, type Env, type Paths, readEnv } from "./paths.ts";
import { parseMcpTable } from "./mcp_config.ts";
import {
  type Config,
  type ConfigKeys,
  configKeys,
  configSchema,
  type McpServerConfig,
  objectOf,
  REQUEST_FIELDS,
} from "./config_schema.ts";

export type { Config, McpServerConfig } from "./config_schema.ts";
export { type ConfigReport, configReport } from "./config_problems.ts";
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
 * Parses the TOML text. smol-toml's error message quotes the file's lines
 * around the fault (an `[mcp.NAME] env` secret among them): only its position
 * and its reason are kept, in a person's words, and the error is not attached
 * as the cause, which the log at exit would print. The lines before the
 * fault are still read when they parse alone, so their problems are reported
 * with it.
 */
function parseToml(text: string, problems: ConfigProblems): Table {
  try {
    return parse(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    problems.keep(problems.syntaxError(error, text));
    const before = text.split(/\r?\n/).slice(0, error.line - 1).join("\n");
    try {
      return parse(before);
    } catch {
      return {};
    }
  }
}

/** A key's parts, from its written form (`a."b c".d`): spaces around dots and the quotes dropped. */
function keyParts(written: string): string[] {
  return written.split(/\s*\.\s*/).map((part) =>
    part.replace(/^(["'])(.*)\1$/, "$2")
  );
}

const HEADER = /^\s*\[\s*([^\]]*?)\s*\]/;
const KEY =
  /^\s*((?:[\w-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[\w-]+|"[^"]*"|'[^']*'))*)\s*=/;

/** The line that sets a dotted key (under its `[table]` header, or dotted in full), else the line of its table (an inline table's keys share its line), when found. */
function lineOf(text: string, dotted: string): number | undefined {
  let table: string[] = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    const header = line.match(HEADER);
    const key = header ? undefined : line.match(KEY);
    if (header) table = keyParts(header[1] ?? "");
    else if (
      key && [...table, ...keyParts(key[1] ?? "")].join(".") === dotted
    ) {
      return index + 1;
    }
  }
  const parent = dotted.split(".").slice(0, -1).join(".");
  return parent === "" ? undefined : lineOf(text, parent);
}

/** What reading one key needs: where to report, and the warnings so far. */
interface Reading {
  file: string;
  problems: ConfigProblems;
  complain: (key: string, problem: string) => never;
  warnings: string[];
  paths: Paths;
  env: Env;
}

/**
 * Parses TOML text. A file with problems is refused with all of them (see
 * config_problems.ts): SyntaxErrors naming file:line:col and what to fix,
 * TypeErrors naming file, line, key and the expected type.
 */
export function parseConfig(
  text: string,
  file: string,
  paths: Paths,
  env: Env = readEnv,
): LoadedConfig {
  const problems = new ConfigProblems(file);
  const doc = parseToml(text, problems);
  const reading: Reading = {
    file,
    problems,
    complain: (key, problem) => {
      throw problems.typeError(lineOf(text, key), key, problem);
    },
    warnings: [],
    paths,
    env,
  };
  const keys = configKeys(paths);
  const config: Config = objectOf(keys).parse({});
  for (const [key, value] of Object.entries(doc)) {
    if (!Object.hasOwn(keys, key)) {
      reading.warnings.push(
        `unknown key ${JSON.stringify(key)} in ${file}${
          didYouMean(key, Object.keys(keys))
        }`,
      );
      continue;
    }
    try {
      readKey(config, keys, key as keyof ConfigKeys, value, reading);
    } catch (error) {
      problems.keep(error);
    }
  }
  problems.throwIfAny(reading.warnings);
  return { config, warnings: reading.warnings, file };
}

/** Checks one known key and sets it on `config`; a problem is thrown by `complain`, or kept for a `[request]` field. */
function readKey(
  config: Config,
  keys: ConfigKeys,
  name: keyof ConfigKeys,
  value: unknown,
  reading: Reading,
): void {
  const { complain, paths, env } = reading;
  if (name === "mcp") {
    config.mcp = readMcp(value, reading);
    return;
  }
  const { schema, expected, shown } = keys[name];
  const parsed = checked(schema, expected, shown, value);
  if (parsed.problem !== undefined) complain(name, parsed.problem);
  switch (name) {
    case "request":
      config.request = readRequest(config.request, value as Table, reading);
      break;
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

/** The `[request]` table merged over the defaults: each field llama-server types is checked (every bad one kept as a problem), and a field the daemon sets or one close to a known name is warned about. */
function readRequest(
  defaults: Table,
  request: Table,
  reading: Reading,
): Table {
  const { file, warnings, problems, complain } = reading;
  const known = Object.keys(REQUEST_FIELDS);
  for (const [field, value] of Object.entries(request)) {
    const key = `request.${field}`;
    if (DAEMON_REQUEST_KEYS.has(field)) {
      warnings.push(`key "${key}" in ${file} is ignored: the daemon sets it`);
    } else if (Object.hasOwn(REQUEST_FIELDS, field)) {
      const { schema, expected, shown } =
        REQUEST_FIELDS[field as keyof typeof REQUEST_FIELDS];
      const { problem } = checked(schema, expected, shown, value);
      if (problem === undefined) continue;
      try {
        complain(key, problem);
      } catch (error) {
        problems.keep(error);
      }
    } else {
      // Other servers take other fields, so an unknown one is sent as
      // written; only a near miss of a known one is worth a word.
      const hint = didYouMean(field, known);
      if (hint !== "") {
        warnings.push(
          `unknown key "${key}" in ${file}${hint} (it is sent as written)`,
        );
      }
    }
  }
  // The file's own table, not zod's copy, so every key stays plain data.
  return mergeTables(defaults, request);
}

/** The `[mcp.NAME]` servers, each checked on its own so that every bad one is reported. */
function readMcp(
  value: unknown,
  reading: Reading,
): Record<string, McpServerConfig> {
  const { complain, problems, warnings, file } = reading;
  if (!isTable(value)) {
    return complain("mcp", "must be a table of [mcp.NAME] tables");
  }
  const servers: Table = {};
  for (const [name, table] of Object.entries(value)) {
    try {
      const one: Table = {};
      put(one, name, table);
      const parsed = parseMcpTable(one, complain);
      for (const [server, config] of Object.entries(parsed.servers)) {
        put(servers, server, config);
      }
      warnings.push(
        ...parsed.warnings.map((warning) => `${warning} in ${file}`),
      );
    } catch (error) {
      problems.keep(error);
    }
  }
  return servers as Record<string, McpServerConfig>;
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
    const unreadable = new AssistantError(
      `Cannot read the config file ${file}: make it a readable file or remove it`,
      { cause: error },
    );
    throw refusedConfig(unreadable, {
      problems: [unreadable.message],
      warnings: [],
    });
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    const garbled = new SyntaxError(
      `${file}: not valid UTF-8: save it as UTF-8`,
      { cause: error },
    );
    throw refusedConfig(garbled, { problems: [garbled.message], warnings: [] });
  }
  return parseConfig(text, file, paths, env);
}
