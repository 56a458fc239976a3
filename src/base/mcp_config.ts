/**
 * The `[mcp.NAME]` tables of the config: one MCP server each, started over
 * stdio. Validated here into `McpServerConfig`, with errors that name the key.
 */
import { isAbsolute, resolve } from "node:path";

/** One MCP server as the config declares it. */
export interface McpServerConfig {
  /** argv; command[0] is resolved like a tool's executable (relative to the config dir). */
  command: string[];
  /** Added to the environment the server inherits, never replacing it. */
  env: Record<string, string>;
  /** Whether each of its calls waits for the user's approval. */
  confirm: boolean;
  /** Seconds for one request to it; null means `tool_timeout`. */
  timeout: number | null;
}

/** Server names: the prefix of their tools' names (`NAME__tool`). */
export const MCP_NAME_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

const SERVER_KEYS = new Set(["command", "env", "confirm", "timeout"]);

/** Reports a bad key: the dotted key and what is wrong, e.g. ("mcp.fs.command", "must be …"). */
export type Complain = (key: string, problem: string) => never;

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null &&
    !Array.isArray(value) && !(value instanceof Date);
}

/** Validates the `mcp` table; returns the servers and warnings for unknown keys. */
export function parseMcpTable(
  value: unknown,
  maxSeconds: number,
  complain: Complain,
): { servers: Record<string, McpServerConfig>; warnings: string[] } {
  if (!isTable(value)) {
    return complain("mcp", "must be a table of [mcp.NAME] tables");
  }
  const servers: Record<string, McpServerConfig> = {};
  const warnings: string[] = [];
  for (const [name, raw] of Object.entries(value)) {
    const key = `mcp.${name}`;
    if (!MCP_NAME_PATTERN.test(name)) {
      complain(
        key,
        `is not a valid server name: use 1 to 32 letters, digits, "_" or "-" (it prefixes its tools' names)`,
      );
    }
    if (!isTable(raw)) complain(key, "must be a table with command = [argv…]");
    const table = raw as Record<string, unknown>;
    for (const field of Object.keys(table)) {
      if (!SERVER_KEYS.has(field)) {
        warnings.push(`unknown key "${key}.${field}"`);
      }
    }
    const { command, env = {}, confirm = true, timeout } = table;
    if (
      !Array.isArray(command) || command.length === 0 ||
      !command.every((item) => typeof item === "string") || command[0] === ""
    ) {
      complain(
        `${key}.command`,
        'must be a non-empty array of strings, e.g. ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]',
      );
    }
    if (
      !isTable(env) ||
      !Object.values(env).every((item) => typeof item === "string")
    ) {
      complain(
        `${key}.env`,
        'must be a table of strings, e.g. {KEY = "value"}',
      );
    }
    if (typeof confirm !== "boolean") {
      complain(`${key}.confirm`, "must be true or false");
    }
    if (
      timeout !== undefined &&
      (typeof timeout !== "number" || !(timeout > 0) || timeout > maxSeconds)
    ) {
      complain(
        `${key}.timeout`,
        `must be a number of seconds above 0 and at most ${maxSeconds}`,
      );
    }
    servers[name] = {
      command: command as string[],
      env: { ...env as Record<string, string> },
      confirm: confirm as boolean,
      timeout: (timeout as number | undefined) ?? null,
    };
  }
  return { servers, warnings };
}

/** The path a server's command names when it holds a "/" (relative to the config dir); null for a bare name looked up on PATH. */
export function mcpCommandPath(
  server: McpServerConfig,
  configDir: string,
): string | null {
  const command0 = server.command[0] ?? "";
  if (!command0.includes("/")) return null;
  return isAbsolute(command0)
    ? resolve(command0)
    : resolve(configDir, command0);
}
