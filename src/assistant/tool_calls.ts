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
import type { Approval, TurnConfig, TurnTools } from "./turn.ts";

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

  /** The tools' function schemas for a request. */
  schemas(): unknown[] {
    return this.#toolbox.schemas();
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
  approval(call: ToolCall, signal: AbortSignal): Approval | null {
    const name = call.function.name;
    if (!this.#toolbox.confirms(name)) return null;
    // A call refused before it runs (bad arguments) needs no approval.
    const args = this.#toolbox.runnableArgs(name, call.function.arguments);
    if (args === null) return null;
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

  /** Runs one call. */
  run(call: ToolCall): Promise<ToolOutcome> {
    const { config } = this.#options;
    return this.#toolbox.run(call.function.name, call.function.arguments, {
      outputLimit: config.tool_output_limit,
      defaultTimeout: config.tool_timeout,
      signal: this.#options.signal,
      timeoutHelper: this.#options.toolKillHelper,
    });
  }
}
