/**
 * The daemon's permission flags, derived from its paths and config, and the
 * check of those flags against what the running process was granted.
 */

import { isAbsolute } from "node:path";
import type { Config } from "./config.ts";
import { clean, ENV_VARS, type Paths } from "./paths.ts";
import { AssistantError } from "./errors.ts";
import { mcpCommandPath } from "./mcp_config.ts";
import { holds, type Kind, netHost } from "./grant_query.ts";

/** What the flags are derived from. */
export interface FlagInput {
  paths: Paths;
  config: Config;
  /** Resolved absolute paths of the tools' executables (and runner helpers). */
  executables: string[];
}

interface Grant {
  kind: Kind;
  values: string[];
}

/** Absolute and normalised, or an error naming the path: Deno lists cannot hold commas. */
function checkedPath(path: string, what: string): string {
  if (!isAbsolute(path)) {
    throw new TypeError(
      `The ${what} ${
        JSON.stringify(path)
      } is not an absolute path: resolve it before deriving the flags`,
    );
  }
  if (path.includes(",")) {
    throw new AssistantError(
      `The ${what} ${path} contains a comma, which a Deno permission list cannot express: move or rename it`,
    );
  }
  return clean(path);
}

function grants(input: FlagInput): Grant[] {
  const { paths, config } = input;
  const socket = checkedPath(paths.socketPath, "socket path");
  const dataDir = checkedPath(paths.dataDir, "data directory");
  const read = [
    socket,
    dataDir,
    checkedPath(paths.configDir, "config directory"),
    ...config.tools_dirs.map((dir) => checkedPath(dir, "tools directory")),
    // An MCP server named by path: the daemon tells a missing file from a
    // missing grant by looking at it.
    ...Object.values(config.mcp).flatMap((server) => {
      const path = mcpCommandPath(server, paths.configDir);
      return path === null ? [] : [checkedPath(path, "MCP server command")];
    }),
  ];
  return [
    { kind: "read", values: read },
    { kind: "write", values: [socket, dataDir] },
    {
      kind: "net",
      values: [
        netHost(config.llm_url),
        ...(config.embed_url === "" ? [] : [netHost(config.embed_url)]),
        `unix:${socket}`,
      ],
    },
    {
      kind: "run",
      values: input.executables.map((exe) => checkedPath(exe, "executable")),
    },
    { kind: "env", values: [...ENV_VARS] },
  ];
}

function flag(kind: Kind, values: string[]): string {
  return `--allow-${kind}=${[...new Set(values)].sort().join(",")}`;
}

/**
 * The daemon's heap setting: a young generation of at most 4 MiB. V8's
 * default lets it grow to tens of MiB, and the daemon's RSS with it, from
 * about 65 MB to about 190 MB in its first few hundred turns; with this it
 * levels off near 100 MB, and the big events (`open` of a long conversation)
 * get faster, not slower (BENCHMARKS.md, memory). `--optimize-for-size` saved
 * a few MB more but doubled the time of those events.
 */
export const V8_FLAGS = "--v8-flags=--max-semi-space-size=4";

/** The exact deno run flags for this config: scoped grants (never -A or an unscoped --allow-*), then V8_FLAGS. */
export function deriveFlags(input: FlagInput): string[] {
  return [
    ...grants(input)
      .filter((grant) => grant.values.length > 0)
      .map((grant) => flag(grant.kind, grant.values)),
    V8_FLAGS,
  ];
}

/** The flags among deriveFlags(...) that this process was not granted (Deno.permissions.querySync), e.g. ["--allow-net=127.0.0.1:8080"]. */
export function missingGrants(
  input: Omit<FlagInput, "executables">,
): string[] {
  const missing: string[] = [];
  for (const grant of grants({ ...input, executables: [] })) {
    const absent = grant.values.filter((value) => !holds(grant.kind, value));
    if (absent.length > 0) missing.push(flag(grant.kind, absent));
  }
  return missing;
}
