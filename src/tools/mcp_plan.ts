/**
 * Where each MCP server's executable is, and whether this process may run
 * it: the same resolution as a tool file's (`resolveExecutable`), for the
 * flags the launcher derives and for the daemon's check of its grants.
 */
import type { Config } from "../base/config.ts";
import type { McpServerConfig } from "../base/mcp_config.ts";
import { holds } from "../base/grant_query.ts";
import {
  canRunExecutable,
  processPath,
  resolveExecutable,
} from "./executable.ts";

/** Injected environment of the resolution; the process's own by default. */
export interface McpResolveOptions {
  pathEnv?: string;
  canRun?: (executable: string) => boolean;
}

/** A server ready to start. */
export interface PlannedServer {
  name: string;
  config: McpServerConfig;
  executable: string;
}

/** The outcome for every configured server. */
export interface McpPlan {
  /** Servers whose executable is found and may be run. */
  servers: PlannedServer[];
  /** Servers left out, and why (a command that does not exist). */
  leftOut: { name: string; reason: string }[];
  /** Grants the config needs that this process lacks: the daemon refuses to start. */
  missing: string[];
}

function notFound(command0: string, configDir: string): string {
  return command0.includes("/")
    ? `its executable ${command0} is not there or not executable (a relative path starts at ${configDir})`
    : `its executable ${command0} was not found on PATH`;
}

/** Resolved executables of the configured servers, for `--allow-run`; a command that is not found adds nothing. */
export function mcpExecutables(
  config: Pick<Config, "mcp">,
  configDir: string,
  options: McpResolveOptions = {},
): string[] {
  const pathEnv = options.pathEnv ?? processPath();
  return Object.values(config.mcp).flatMap((server) => {
    const exe = resolveExecutable(
      server.command[0] ?? "",
      configDir,
      pathEnv,
      options.canRun ?? (() => true),
    );
    return exe === null ? [] : [exe];
  });
}

/**
 * Whether a bare command name exists on PATH when this process may not run
 * it. Deno looks a bare name up before it checks the grant (measured on
 * 2.9.6): a missing program fails with NotFound, a present one that is not
 * granted with NotCapable, and neither starts anything.
 */
function existsUngranted(name: string): boolean {
  try {
    const child = new Deno.Command(name, {
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    // Granted after all: end what the probe started.
    child.kill("SIGKILL");
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}

/** Resolves each server's executable under this process's grants. */
export function planMcp(
  config: Pick<Config, "mcp">,
  configDir: string,
  options: McpResolveOptions = {},
): McpPlan {
  const pathEnv = options.pathEnv ?? processPath();
  const canRun = options.canRun ?? canRunExecutable;
  const plan: McpPlan = { servers: [], leftOut: [], missing: [] };
  for (const [name, server] of Object.entries(config.mcp)) {
    const command0 = server.command[0] ?? "";
    const exe = resolveExecutable(command0, configDir, pathEnv, canRun);
    if (exe !== null && canRun(exe)) {
      plan.servers.push({ name, config: server, executable: exe });
    } else if (exe !== null) {
      plan.missing.push(`--allow-run=${exe}`);
    } else if (
      !command0.includes("/") &&
      !holds("run", command0) &&
      existsUngranted(command0)
    ) {
      plan.missing.push(`--allow-run=${command0}`);
    } else {
      plan.leftOut.push({ name, reason: notFound(command0, configDir) });
    }
  }
  return plan;
}
