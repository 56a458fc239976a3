/**
 * The model's tool calls as a reply makes them: the toolbox that runs them,
 * and the user's approval first for the tools that wait for it.
 */
import type { ToolCall } from "../llm/chat_types.ts";
import type { ConfirmView, Event, Ref } from "../protocol/protocol.ts";
import type { ToolDef } from "../tools/load.ts";
import type { McpHub } from "../tools/mcp.ts";
import type { runTool, ToolOutcome } from "../tools/runner.ts";
import { Toolbox } from "../tools/toolbox.ts";
import { Approvals, declinedOutcome } from "./approval.ts";
import { AssistantError } from "../base/errors.ts";
import type { Approval, TurnConfig, TurnTools } from "./turn.ts";
import type { Conversation } from "./conversation.ts";

/** A tool of the daemon's own, besides the tool files and MCP servers. */
export interface BuiltinTool {
  name: string;
  description: string;
  /** Its arguments' JSON schema. */
  parameters: Record<string, unknown>;
  /** Every call waits for the user's approval, whatever the config says. */
  confirm: boolean;
  /** Whether the model is offered it in this conversation. */
  offered(conversation: Conversation): boolean;
  /** Whether a call's arguments (an object) can run; a call that cannot is not asked of the user. Absent: any can. */
  valid?(args: Record<string, unknown>): boolean;
  /** Runs a call with its arguments (an object); resolves to what the model reads. */
  run(
    args: Record<string, unknown>,
    conversation: Conversation,
  ): Promise<string> | string;
}

/** What the tool calls need. */
export interface ToolCallsOptions {
  tools: readonly ToolDef[];
  mcp: McpHub | null;
  /** Tools that wait for approval (besides tool files that say so), and how long a call waits; default none and 120 s. */
  confirm: { tools: readonly string[]; timeoutSeconds: number } | undefined;
  config: Pick<TurnConfig, "tool_output_limit" | "tool_timeout">;
  emit: (event: Event) => void;
  /** Kills running tools: the daemon is shutting down. */
  signal: AbortSignal;
  /** Coreutils `timeout`, to kill a timed-out tool's whole process group; null kills the tool alone. */
  toolKillHelper: string | null;
  runTool?: typeof runTool;
  /** The daemon's own tools; their names win over a tool file's. */
  builtins?: readonly BuiltinTool[];
}

/** Runs the model's tool calls, each one asked of the user first where it must be. */
export class ToolCalls implements TurnTools {
  readonly #options: ToolCallsOptions;
  readonly #toolbox: Toolbox;
  readonly #approvals: Approvals;

  /** Creates the toolbox of the tool files and MCP servers, with no call waiting. */
  constructor(options: ToolCallsOptions) {
    this.#options = options;
    this.#toolbox = new Toolbox({
      tools: options.tools,
      mcp: options.mcp,
      confirmTools: options.confirm?.tools ?? [],
      ...(options.runTool ? { runTool: options.runTool } : {}),
    });
    this.#approvals = new Approvals({
      emit: options.emit,
      timeoutMs: this.#confirmTimeout * 1000,
    });
  }

  get #confirmTimeout(): number {
    return this.#options.confirm?.timeoutSeconds ?? 120;
  }

  /** The tools' function schemas for a request in the conversation, sorted by name (the request's start stays byte-stable). */
  schemas(conversation: Conversation): unknown[] {
    const own = this.#offered(conversation).map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
      },
    }));
    const taken = new Set(own.map((schema) => schema.function.name));
    const named = (schema: unknown) =>
      String((schema as { function?: { name?: unknown } }).function?.name);
    return [
      ...own,
      ...this.#toolbox.schemas().filter((schema) => !taken.has(named(schema))),
    ].sort((a, b) => named(a) < named(b) ? -1 : named(a) > named(b) ? 1 : 0);
  }

  #offered(conversation: Conversation): BuiltinTool[] {
    return (this.#options.builtins ?? []).filter((tool) =>
      tool.offered(conversation)
    );
  }

  #builtin(name: string, conversation: Conversation): BuiltinTool | null {
    return this.#offered(conversation).find((tool) => tool.name === name) ??
      null;
  }

  /** The call waiting for the user now, or null. */
  get waiting(): ConfirmView | null {
    return this.#approvals.waiting;
  }

  /** Decides a waiting call; false when no call of that id waits. */
  answer(call: string, allow: boolean, ref: Ref | undefined): boolean {
    return this.#approvals.answer(call, allow, ref);
  }

  /** The wait for the user's approval where the call needs one; null to run it at once. */
  approval(
    call: ToolCall,
    signal: AbortSignal,
    conversation: Conversation,
  ): Approval | null {
    const name = call.function.name;
    const builtin = this.#builtin(name, conversation);
    if (builtin ? !builtin.confirm : !this.#toolbox.confirms(name)) return null;
    // A call refused before it runs (bad arguments) needs no approval.
    const args = builtin
      ? parseArgs(call.function.arguments)
      : this.#toolbox.runnableArgs(name, call.function.arguments);
    if (args === null || builtin?.valid?.(args) === false) return null;
    const started = performance.now();
    const { view, decision } = this.#approvals.ask(name, args, signal);
    const outcome = decision.then((decided) =>
      decided === "allow" ? null : declinedOutcome(
        name,
        decided,
        this.#confirmTimeout,
        Math.round(performance.now() - started),
      )
    );
    return { view, outcome };
  }

  /** Runs one call made in the conversation. */
  async run(call: ToolCall, conversation: Conversation): Promise<ToolOutcome> {
    const builtin = this.#builtin(call.function.name, conversation);
    if (builtin) return await runBuiltin(builtin, call, conversation);
    const { config } = this.#options;
    return await this.#toolbox.run(
      call.function.name,
      call.function.arguments,
      {
        outputLimit: config.tool_output_limit,
        defaultTimeout: config.tool_timeout,
        signal: this.#options.signal,
        timeoutHelper: this.#options.toolKillHelper,
      },
    );
  }
}

/** A call's arguments as an object; null when they are not one. */
function parseArgs(json: string): Record<string, unknown> | null {
  try {
    const args: unknown = JSON.parse(json === "" ? "{}" : json);
    return typeof args === "object" && args !== null && !Array.isArray(args)
      ? args as Record<string, unknown>
      : null;
  } catch {
    return null;
  }
}

/** Runs a built-in tool's call; never throws: a fault is what the model reads. */
async function runBuiltin(
  tool: BuiltinTool,
  call: ToolCall,
  conversation: Conversation,
): Promise<ToolOutcome> {
  const started = performance.now();
  const args = parseArgs(call.function.arguments);
  let content: string;
  let status = "exit 0";
  if (args === null) {
    content = `The arguments of ${tool.name} must be a JSON object.`;
    status = "invalid arguments";
  } else {
    try {
      content = await tool.run(args, conversation);
    } catch (error) {
      content = `${tool.name} failed: ${
        error instanceof AssistantError ? error.message : "an internal error"
      }.`;
      status = "failed";
    }
  }
  return {
    content,
    bytes: new TextEncoder().encode(content).length,
    lines: content.split("\n").length,
    durationMs: Math.round(performance.now() - started),
    status,
  };
}
