/**
 * MCP servers as tool sources: each configured server is started over
 * stdio (`mcp_server.ts`), its tools are listed and offered as `NAME__tool`
 * with the server's own JSON schema, and a call goes through `tools/call`
 * (`mcp_call.ts`). A server that does not start, or dies, has its tools left
 * out until it is back: it is restarted with a growing pause, and the other
 * tools are unaffected.
 */
import type { PlannedServer } from "./mcp_plan.ts";
import { McpServer, type McpSettings, type McpTool } from "./mcp_server.ts";
import type { ToolOutcome } from "./runner.ts";

export {
  McpServer,
  type McpSettings,
  type McpStatus,
  type McpTool,
} from "./mcp_server.ts";

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

/** What the toolbox needs of the MCP side: the tools offered now, and calls to them. */
export interface McpTools {
  /** The tools offered now, from the servers that are up. */
  tools(): McpTool[];
  /** Whether `name` is an MCP tool offered now. */
  has(name: string): boolean;
  /** Whether a call of `name` waits for approval by its server's `confirm`. */
  confirms(name: string): boolean;
  /** Runs one call of an offered tool; never throws. */
  call(
    name: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Omit<ToolOutcome, "durationMs">>;
}

/** Every configured server: the tools they offer now and the calls to them. */
export class McpHub implements McpTools, AsyncDisposable {
  readonly servers: McpServer[];
  #tools = new Map<string, { server: McpServer; tool: McpTool }>();

  /** Creates the servers (not started) from the plan. */
  constructor(planned: PlannedServer[], settings: McpSettings) {
    this.servers = planned.map((server) =>
      new McpServer(server, settings, () => this.#index())
    );
  }

  /** Starts every server; resolves once each has come up or failed once. */
  async start(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.start()));
  }

  #index(): void {
    const tools = new Map<string, { server: McpServer; tool: McpTool }>();
    for (const server of this.servers) {
      const status = server.status;
      if (status.state !== "ready") continue;
      for (const tool of status.tools) tools.set(tool.name, { server, tool });
    }
    this.#tools = tools;
  }

  /** The tools offered now, from the servers that are up. */
  tools(): McpTool[] {
    return [...this.#tools.values()].map(({ tool }) => tool);
  }

  /** Whether `name` is an MCP tool offered now. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** Whether a call of `name` waits for approval by its server's `confirm`. */
  confirms(name: string): boolean {
    return this.#tools.get(name)?.server.config.confirm ?? false;
  }

  /** Runs one call of an offered tool; never throws. */
  async call(
    name: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Omit<ToolOutcome, "durationMs">> {
    const entry = this.#tools.get(name);
    if (!entry) {
      return {
        bytes: 0,
        lines: 0,
        content: `The tool ${name} did not run: its MCP server is not running.`,
        status: "server down",
      };
    }
    return await entry.server.call(entry.tool, args, signal);
  }

  /** Ends every server. */
  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all(
      this.servers.map((server) => server[Symbol.asyncDispose]()),
    );
  }
}

/** A server's status in words, for `main.ts check`. */
export function describeStatus(server: McpServer): string {
  const status = server.status;
  switch (status.state) {
    case "ready":
      return status.tools.length === 0
        ? "offers no tools"
        : `${plural(status.tools.length, "tool")} (${
          status.tools.map((tool) => tool.name).join(", ")
        })`;
    case "failed":
      return `failed: ${status.reason}`;
    case "starting":
      return "still starting";
  }
}
