/**
 * Every tool the model is offered, from tool files and MCP servers: their
 * schemas for a request, which ones wait for approval, and one entry point
 * that runs a call wherever its tool lives.
 */
import { log } from "../base/log.ts";
import { checkArguments } from "./args.ts";
import { type ToolDef, toolSchemas } from "./load.ts";
import type { McpTools } from "./mcp.ts";
import { type RunOptions, runTool, type ToolOutcome } from "./runner.ts";

/** What a toolbox holds. */
export interface ToolboxOptions {
  tools: readonly ToolDef[];
  /** The MCP servers' tools (an `McpHub`); none when absent. */
  mcp?: McpTools | null;
  /** Names whose calls wait for approval, besides tool files that say so. */
  confirmTools?: readonly string[];
  /** Runs a tool file's call; `runTool` by default. */
  runTool?: typeof runTool;
}

/** A tool's schema with the name it is sorted by. */
interface Named {
  name: string;
  schema: unknown;
}

/** The tools of tool files and MCP servers behind one name space. */
export class Toolbox {
  readonly #files: ReadonlyMap<string, ToolDef>;
  readonly #fileSchemas: Named[];
  readonly #mcp: McpTools | null;
  readonly #confirm: ReadonlySet<string>;
  readonly #runTool: typeof runTool;
  readonly #shadowed = new Set<string>();

  /** Indexes the tool files; MCP tools are read at each use, as servers come and go. */
  constructor(options: ToolboxOptions) {
    this.#files = new Map(options.tools.map((tool) => [tool.name, tool]));
    const schemas = toolSchemas([...options.tools]);
    this.#fileSchemas = options.tools.map((tool, i) => ({
      name: tool.name,
      schema: schemas[i],
    }));
    this.#mcp = options.mcp ?? null;
    this.#confirm = new Set(options.confirmTools ?? []);
    this.#runTool = options.runTool ?? runTool;
  }

  /** The MCP tools offered now that no tool file's name hides. */
  #mcpTools() {
    return (this.#mcp?.tools() ?? []).filter((tool) => {
      if (!this.#files.has(tool.name)) return true;
      if (!this.#shadowed.has(tool.name)) {
        this.#shadowed.add(tool.name);
        log.warn("mcp tool left out", {
          tool: tool.name,
          reason: "a tool file has the same name",
        });
      }
      return false;
    });
  }

  /** Every tool's name offered now, sorted. */
  names(): string[] {
    return [...this.#files.keys(), ...this.#mcpTools().map((t) => t.name)]
      .sort();
  }

  /**
   * The function schemas for a chat request, tool files' and MCP tools' (with
   * their servers' schemas) together, sorted by name: the tools sit at the
   * start of every prompt, so their order must not follow the order files
   * were read or servers came up, or the server's prompt cache is lost.
   */
  schemas(): unknown[] {
    const mcp = this.#mcpTools().map((tool) => ({
      name: tool.name,
      schema: {
        type: "function",
        function: {
          name: tool.name,
          description: tool.description,
          parameters: tool.inputSchema,
        },
      },
    }));
    return [...this.#fileSchemas, ...mcp]
      .sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
      .map((named) => named.schema);
  }

  #isMcp(name: string): boolean {
    return !this.#files.has(name) && (this.#mcp?.has(name) ?? false);
  }

  /** Whether a call of `name` must wait for the user's approval. */
  confirms(name: string): boolean {
    if (this.#files.has(name)) {
      return this.#files.get(name)!.confirm || this.#confirm.has(name);
    }
    if (!this.#isMcp(name)) return false;
    return this.#confirm.has(name) || this.#mcp!.confirms(name);
  }

  /** The arguments of a call that would run, or null when it would be refused before running (unknown tool, bad arguments). */
  runnableArgs(name: string, argsJson: string): Record<string, unknown> | null {
    const file = this.#files.get(name);
    if (file) {
      const checked = checkArguments(file, argsJson);
      return "args" in checked ? checked.args : null;
    }
    if (!this.#isMcp(name)) return null;
    return parseObject(argsJson);
  }

  /** Runs one call; never throws. */
  async run(
    name: string,
    argsJson: string,
    options: RunOptions,
  ): Promise<ToolOutcome> {
    if (!this.#isMcp(name)) {
      return await this.#runTool(this.#files, name, argsJson, {
        ...options,
        known: this.names(),
      });
    }
    const started = performance.now();
    const args = parseObject(argsJson);
    const result = args === null
      ? {
        bytes: 0,
        lines: 0,
        content:
          `The arguments for ${name} must be one JSON object. The tool did not run.`,
        status: "invalid arguments",
      }
      : options.signal?.aborted
      ? {
        bytes: 0,
        lines: 0,
        content:
          `The tool ${name} was not run: the assistant is shutting down.`,
        status: "stopped",
      }
      : await this.#mcp!.call(name, args, options.signal);
    const outcome = {
      ...result,
      durationMs: Math.round(performance.now() - started),
    };
    log.info("tool call", {
      tool: name,
      status: outcome.status,
      bytes: outcome.bytes,
      lines: outcome.lines,
      ms: outcome.durationMs,
    });
    return outcome;
  }
}

/** A JSON object, or null; "" is `{}` (models send it for a call without parameters). */
function parseObject(json: string): Record<string, unknown> | null {
  if (json.trim() === "") return {};
  try {
    const value = JSON.parse(json);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? value
      : null;
  } catch {
    return null;
  }
}
