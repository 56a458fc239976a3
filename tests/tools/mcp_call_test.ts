/** What the model reads when an MCP call fails, by how it failed. */
import assert from "node:assert/strict";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { callFailure } from "../../src/tools/mcp_call.ts";

const SETTINGS = { server: "fs", timeout: 30, outputLimit: 1000 };

Deno.test("a call's failure in words: stopped, timed out, server gone, an error code, anything else", () => {
  const stopped = AbortSignal.abort();
  assert.deepEqual(
    callFailure("fs__read", new Error("aborted"), {
      ...SETTINGS,
      signal: stopped,
    }),
    {
      content: "The tool fs__read was stopped: the assistant is shutting down.",
      status: "stopped",
    },
  );
  assert.deepEqual(
    callFailure(
      "fs__read",
      new McpError(ErrorCode.RequestTimeout, "Request timed out"),
      SETTINGS,
    ),
    {
      content:
        "The tool fs__read was stopped after 30 seconds, its time limit, and gave no complete result.",
      status: "timeout",
    },
  );
  assert.deepEqual(
    callFailure(
      "fs__read",
      new McpError(ErrorCode.ConnectionClosed, "Connection closed"),
      SETTINGS,
    ),
    {
      content:
        "The tool fs__read failed: its MCP server fs exited during the call. It is restarted; the call was not completed.",
      status: "server exited",
    },
  );
  const internal = callFailure(
    "fs__read",
    new McpError(ErrorCode.InternalError, "disk on fire"),
    SETTINGS,
  );
  assert.equal(internal.status, `error ${ErrorCode.InternalError}`);
  assert.match(internal.content, /^The tool fs__read failed: .*disk on fire/);
  assert.deepEqual(callFailure("fs__read", "odd", SETTINGS), {
    content: "The tool fs__read failed: odd",
    status: "failed",
  });
});
