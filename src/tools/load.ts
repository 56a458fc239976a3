/**
 * Tool definitions: one TOML file per tool, validated into a `ToolDef`, its
 * executable resolved to the absolute path that `--allow-run` must name, and
 * the OpenAI-style function schemas the chat request carries.
 */

import { parse } from "smol-toml";
import {
  basename,
  dirname,
  isAbsolute,
  join,
  normalize,
  resolve,
} from "node:path";
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import {
  canRunExecutable,
  processPath,
  resolveExecutable,
} from "./executable.ts";

/** A parameter's JSON type. */
export type ParamType = "string" | "number" | "integer" | "boolean";

/** One declared parameter of a tool. */
export interface ToolParam {
  type: ParamType;
  description: string;
  required: boolean;
  enum?: (string | number)[];
}

/** A loaded, validated tool. */
export interface ToolDef {
  /** The file stem. */
  name: string;
  description: string;
  /** argv as written, placeholders intact. */
  command: string[];
  /** command[0] resolved to an absolute path. */
  executable: string;
  /** Seconds, from the file; null means the configured default. */
  timeout: number | null;
  /** `confirm = true`: every call waits for the user's approval. */
  confirm: boolean;
  parameters: Record<string, ToolParam>;
  /** Absolute path of the TOML file. */
  file: string;
}

/** A tool file left out, and why. */
export interface SkippedTool {
  file: string;
  reason: string;
}

/** Injected environment of `loadTools`. */
export interface LoadToolsOptions {
  /** PATH for bare command names; default the process PATH. */
  pathEnv?: string;
  /** Whether the process may run an executable; default the `run` grant. */
  canRun?: (executable: string) => boolean;
}

/** Tool and parameter names: what the chat API accepts as a function name. */
export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const PARAM_TYPES: readonly string[] = [
  "string",
  "number",
  "integer",
  "boolean",
];
const TOOL_KEYS = new Set([
  "description",
  "command",
  "timeout",
  "confirm",
  "parameters",
]);
const PARAM_KEYS = new Set(["type", "description", "required", "enum"]);

/** OpenAI-style function definitions for the chat request. */
export function toolSchemas(tools: ToolDef[]): unknown[] {
  return tools.map((tool) => {
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    for (const [name, param] of Object.entries(tool.parameters)) {
      properties[name] = {
        type: param.type,
        description: param.description,
        ...(param.enum ? { enum: param.enum } : {}),
      };
      if (param.required) required.push(name);
    }
    return {
      type: "function",
      function: {
        name: tool.name,
        description: tool.description,
        parameters: {
          type: "object",
          properties,
          required,
          additionalProperties: false,
        },
      },
    };
  });
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    !(value instanceof Date);
}

function toNumber(value: unknown): number | null {
  if (typeof value === "number") return value;
  if (typeof value === "bigint" && Number.isSafeInteger(Number(value))) {
    return Number(value);
  }
  return null;
}

function parseParam(
  name: string,
  raw: unknown,
  file: string,
): ToolParam {
  const where = `parameters.${name}`;
  if (!NAME_PATTERN.test(name)) {
    throw new TypeError(
      `parameter name "${name}" must match ${NAME_PATTERN.source}`,
    );
  }
  if (!isTable(raw)) throw new TypeError(`${where} must be a table`);
  for (const key of Object.keys(raw)) {
    if (!PARAM_KEYS.has(key)) {
      log.warn("tool file has an unknown key", {
        file,
        key: `${where}.${key}`,
      });
    }
  }
  const type = raw.type;
  if (typeof type !== "string" || !PARAM_TYPES.includes(type)) {
    throw new TypeError(
      `${where}.type must be one of ${PARAM_TYPES.join(", ")}`,
    );
  }
  const description = raw.description ?? "";
  if (typeof description !== "string") {
    throw new TypeError(`${where}.description must be a string`);
  }
  const required = raw.required ?? false;
  if (typeof required !== "boolean") {
    throw new TypeError(`${where}.required must be true or false`);
  }
  const param: ToolParam = {
    type: type as ParamType,
    description,
    required,
  };
  if (raw.enum !== undefined) param.enum = parseEnum(where, type, raw.enum);
  return param;
}

function parseEnum(
  where: string,
  type: string,
  raw: unknown,
): (string | number)[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new TypeError(`${where}.enum must be a non-empty array`);
  }
  return raw.map((item) => {
    if (type === "string" && typeof item === "string") return item;
    const number = toNumber(item);
    if (type === "number" && number !== null && Number.isFinite(number)) {
      return number;
    }
    if (type === "integer" && number !== null && Number.isInteger(number)) {
      return number;
    }
    throw new TypeError(`${where}.enum values must all be of type ${type}`);
  });
}

/** Validates a parsed tool file; throws TypeError naming the field and the fix. */
function parseTool(
  name: string,
  data: Record<string, unknown>,
  file: string,
): Omit<ToolDef, "executable"> {
  for (const key of Object.keys(data)) {
    if (!TOOL_KEYS.has(key)) {
      log.warn("tool file has an unknown key", { file, key });
    }
  }
  const { description, command, timeout: rawTimeout } = data;
  if (typeof description !== "string" || description.trim() === "") {
    throw new TypeError("description must be a non-empty string");
  }
  if (
    !Array.isArray(command) || command.length === 0 ||
    !command.every((item) => typeof item === "string") || command[0] === ""
  ) {
    throw new TypeError(
      'command must be a non-empty array of strings, e.g. ["./tool.sh", "{place}"]',
    );
  }
  let timeout: number | null = null;
  if (rawTimeout !== undefined) {
    timeout = toNumber(rawTimeout);
    if (timeout === null || !Number.isFinite(timeout) || timeout <= 0) {
      throw new TypeError("timeout must be a positive number of seconds");
    }
  }
  const confirm = data.confirm ?? false;
  if (typeof confirm !== "boolean") {
    throw new TypeError("confirm must be true or false");
  }
  const parameters: Record<string, ToolParam> = {};
  const rawParams = data.parameters ?? {};
  if (!isTable(rawParams)) {
    throw new TypeError(
      "parameters must be a table of [parameters.<name>] tables",
    );
  }
  for (const [paramName, raw] of Object.entries(rawParams)) {
    parameters[paramName] = parseParam(paramName, raw, file);
  }
  return {
    name,
    description,
    command: command as string[],
    timeout,
    confirm,
    parameters,
    file,
  };
}

function syntaxReason(error: unknown): string {
  const e = error as { line?: unknown; column?: unknown; message?: unknown };
  const first = String(e.message ?? error).split("\n")[0] ?? "";
  const message = first.replace(/^Invalid TOML document: /, "");
  return typeof e.line === "number" && typeof e.column === "number"
    ? `TOML syntax error at ${e.line}:${e.column}: ${message}`
    : `TOML syntax error: ${message}`;
}

async function loadOne(
  file: string,
  name: string,
  pathEnv: string,
  canRun: (executable: string) => boolean,
): Promise<ToolDef> {
  if (!NAME_PATTERN.test(name)) {
    throw new TypeError(
      `the file name "${name}" must match ${NAME_PATTERN.source} (it is the tool's name)`,
    );
  }
  const text = await Deno.readTextFile(file);
  let data: Record<string, unknown>;
  try {
    data = parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new SyntaxError(syntaxReason(error), { cause: error });
  }
  const tool = parseTool(name, data, file);
  const command0 = tool.command[0] ?? "";
  const executable = resolveExecutable(
    command0,
    dirname(file),
    pathEnv,
    canRun,
  );
  if (executable === null) {
    throw new AssistantError(
      command0.includes("/")
        ? `executable ${command0} is not there or not executable (relative paths start at ${
          dirname(file)
        })`
        : `executable ${command0} was not found on PATH`,
    );
  }
  if (!canRun(executable)) {
    throw new AssistantError(`--allow-run does not cover ${executable}`);
  }
  return { ...tool, executable };
}

async function tomlFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if ((entry.isFile || entry.isSymlink) && entry.name.endsWith(".toml")) {
      names.push(entry.name);
    }
  }
  return names.sort();
}

/** Loads every *.toml in dirs (an earlier dir's name wins); logs and skips bad ones. */
export async function loadTools(
  dirs: string[],
  options: LoadToolsOptions = {},
): Promise<{ tools: ToolDef[]; skipped: SkippedTool[] }> {
  const pathEnv = options.pathEnv ?? processPath();
  const canRun = options.canRun ?? canRunExecutable;
  const tools: ToolDef[] = [];
  const skipped: SkippedTool[] = [];
  // A name is claimed by its first file even when that file is broken: a
  // user's override that fails must not silently fall back to the bundled one.
  const claimed = new Set<string>();
  for (const rawDir of dirs) {
    const dir = isAbsolute(rawDir) ? normalize(rawDir) : resolve(rawDir);
    let names: string[];
    try {
      names = await tomlFiles(dir);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        log.debug("tools dir absent", { dir });
      } else {
        log.warn("tools dir unreadable", { dir, error: describeError(error) });
      }
      continue;
    }
    for (const fileName of names) {
      const file = join(dir, fileName);
      const name = basename(fileName, ".toml");
      if (claimed.has(name)) {
        log.info("tool file shadowed by an earlier dir", { file, tool: name });
        continue;
      }
      claimed.add(name);
      try {
        tools.push(await loadOne(file, name, pathEnv, canRun));
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        log.warn("tool skipped", { file, reason });
        skipped.push({ file, reason });
      }
    }
  }
  tools.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  log.info("tools loaded", { loaded: tools.length, skipped: skipped.length });
  return { tools, skipped };
}
