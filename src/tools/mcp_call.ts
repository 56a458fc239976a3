/**
 * One MCP `tools/call` through a connected client, and what the model reads
 * when it fails: stopped, past its time limit, its server gone, or an error.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { resultText } from "./mcp_result.ts";
import type { ToolOutcome } from "./runner.ts";

/** The JSON-RPC error code of an SDK error, else null. */
export function codeOf(error: unknown): number | null {
  return error instanceof McpError ? (error as { code: number }).code : null;
}

/** An error's message, or the thrown value in words. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The tool a call runs: the name the model calls and the one its server knows. */
export interface CalledTool {
  name: string;
  remote: string;
}

/** What a call needs besides its client and tool. */
export interface CallSettings {
  /** The server's name, for the model's words. */
  server: string;
  /** Seconds the call may take. */
  timeout: number;
  /** Bytes of the result's text the model reads. */
  outputLimit: number;
  /** Ends the call (the daemon shutting down). */
  signal?: AbortSignal | undefined;
}

/** Runs one call through `tools/call`; never throws. */
export async function callTool(
  client: Client,
  tool: CalledTool,
  args: Record<string, unknown>,
  settings: CallSettings,
): Promise<Omit<ToolOutcome, "durationMs">> {
  const { signal } = settings;
  try {
    const result = await client.callTool(
      { name: tool.remote, arguments: args },
      undefined,
      { timeout: settings.timeout * 1000, ...(signal ? { signal } : {}) },
    );
    const text = await resultText(
      result as Parameters<typeof resultText>[0],
      settings.outputLimit,
    );
    if (result.isError === true) {
      return {
        ...text,
        content: `The tool ${tool.name} reported an error:\n${text.content}`,
        status: "error",
      };
    }
    return { ...text, status: "ok" };
  } catch (error) {
    return { bytes: 0, lines: 0, ...callFailure(tool.name, error, settings) };
  }
}

/** A call that threw, in the model's words, with its status for the log and history. */
export function callFailure(
  tool: string,
  error: unknown,
  settings: CallSettings,
): { content: string; status: string } {
  if (settings.signal?.aborted) {
    return {
      content: `The tool ${tool} was stopped: the assistant is shutting down.`,
      status: "stopped",
    };
  }
  if (codeOf(error) === ErrorCode.RequestTimeout) {
    return {
      content:
        `The tool ${tool} was stopped after ${settings.timeout} seconds, its time limit, and gave no complete result.`,
      status: "timeout",
    };
  }
  if (codeOf(error) === ErrorCode.ConnectionClosed) {
    return {
      content:
        `The tool ${tool} failed: its MCP server ${settings.server} exited during the call. It is restarted; the call was not completed.`,
      status: "server exited",
    };
  }
  return {
    content: `The tool ${tool} failed: ${messageOf(error)}`,
    status: codeOf(error) === null ? "failed" : `error ${codeOf(error)}`,
  };
}
