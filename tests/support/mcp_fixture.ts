/** Config tables for the MCP servers the tests run: the SDK-written fixture and the published filesystem server. */

const ROOT = new URL("../../", import.meta.url).pathname;
/** The project's deno.json: its imports pin the SDK. */
export const DENO_CONFIG = `${ROOT}deno.json`;
/** The tests' lock file: it pins the SDK's and the published server's packages with their checksums. */
export const TESTS_LOCK = `${ROOT}tests/deno.lock`;
/** The fixture server's source. */
export const FIXTURE_SERVER = `${ROOT}tests/fixtures/mcp/server.ts`;
/** The published server, pinned here and in the tests' lock. */
export const FILESYSTEM_SERVER =
  "npm:@modelcontextprotocol/server-filesystem@2026.8.31";

/** argv that runs the fixture server with deno (no grants: it needs none). */
export function fixtureCommand(args: string[] = []): string[] {
  return [
    Deno.execPath(),
    "run",
    "--quiet",
    "--config",
    DENO_CONFIG,
    `--lock=${TESTS_LOCK}`,
    FIXTURE_SERVER,
    ...args,
  ];
}

/** argv that runs the published filesystem server, limited by Deno's grants as by its own argument to `dir`. */
export function filesystemCommand(dir: string): string[] {
  return [
    Deno.execPath(),
    "run",
    "--quiet",
    "--config",
    DENO_CONFIG,
    `--lock=${TESTS_LOCK}`,
    "--allow-env",
    `--allow-read=${dir}`,
    `--allow-write=${dir}`,
    FILESYSTEM_SERVER,
    dir,
  ];
}

/** One `[mcp.NAME]` table. */
export function mcpTable(
  name: string,
  command: string[],
  extra: Record<string, string | number | boolean> = {},
): string {
  const lines = [`[mcp.${name}]`, `command = ${JSON.stringify(command)}`];
  for (const [key, value] of Object.entries(extra)) {
    lines.push(`${key} = ${JSON.stringify(value)}`);
  }
  return lines.join("\n") + "\n";
}
