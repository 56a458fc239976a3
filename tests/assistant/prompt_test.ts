import assert from "node:assert/strict";
import type { ToolCall } from "../../src/llm/chat_types.ts";
import {
  replayable,
  stampQuestion,
  systemPrompt,
} from "../../src/assistant/prompt.ts";

Deno.test("the system prompt carries today's date and the model's file name", () => {
  const now = new Date(2026, 10, 30, 9, 5);
  assert.equal(
    systemPrompt("Be brief.", "/srv/models/Qwen3-8B-Q4_K_M.gguf", now),
    "Be brief.\n\nToday is Monday, 30 November 2026. You are running as the model Qwen3-8B-Q4_K_M.",
  );
  assert.match(systemPrompt("P", "tiny", now), /the model tiny\.$/);
});

Deno.test("the question is stamped with the local date, time and offset", () => {
  const now = new Date(2026, 0, 2, 3, 4);
  const offset = -now.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const hh = String(Math.floor(Math.abs(offset) / 60)).padStart(2, "0");
  const mm = String(Math.abs(offset) % 60).padStart(2, "0");
  assert.equal(
    stampQuestion("What now?", now),
    `[2026-01-02 03:04 UTC${sign}${hh}:${mm}] What now?`,
  );
});

Deno.test("tool calls go back with arguments llama-server can parse", () => {
  const call = (args: string): ToolCall => ({
    id: "c1",
    type: "function",
    function: { name: "weather", arguments: args },
  });
  const good = call('{"place":"Pisa"}');
  assert.equal(replayable(good), good);
  for (const bad of ['{"place":', "", "[1]", "null", '"text"', "3"]) {
    assert.deepEqual(replayable(call(bad)), call("{}"), bad);
  }
});
