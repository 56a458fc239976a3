/**
 * The `[mcp.NAME]` tables of the config: one MCP server each, started over
 * stdio. Each field is declared in config_schema.ts; here the tables are
 * checked one by one, with errors that name the dotted key and never quote a
 * value (an `env` table holds secrets).
 */
import { isAbsolute, resolve } from "node:path";
import {
  MCP_SERVER,
  MCP_SERVER_FIELDS,
  type McpServerConfig,
} from "./config_schema.ts";

export type { McpServerConfig } from "./config_schema.ts";

/** Server names: the prefix of their tools' names (`NAME__tool`). */
export const MCP_NAME_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

/** Reports a bad key: the dotted key and what is wrong, e.g. ("mcp.fs.command", "must be …"). */
export type Complain = (key: string, problem: string) => never;

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null &&
    !Array.isArray(value) && !(value instanceof Date);
}

/** Checks one server table against its declared fields, the first bad one named. */
function parseServer(
  key: string,
  table: Record<string, unknown>,
  complain: Complain,
): McpServerConfig {
  const parsed = MCP_SERVER.safeParse(table);
  if (parsed.success) return parsed.data;
  const field = String(parsed.error.issues[0]?.path[0]);
  return Object.hasOwn(MCP_SERVER_FIELDS, field)
    ? complain(
      `${key}.${field}`,
      MCP_SERVER_FIELDS[field as keyof typeof MCP_SERVER_FIELDS].problem,
    )
    : complain(key, "must be a table with command = [argv…]");
}

/** Validates the `mcp` table; returns the servers and warnings for unknown keys. */
export function parseMcpTable(
  value: unknown,
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
      if (!Object.hasOwn(MCP_SERVER_FIELDS, field)) {
        warnings.push(`unknown key "${key}.${field}"`);
      }
    }
    Object.defineProperty(servers, name, {
      value: parseServer(key, table, complain),
      enumerable: true,
      writable: true,
      configurable: true,
    });
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
