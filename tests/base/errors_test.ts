import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import { describeSafely } from "../../src/base/log.ts";

Deno.test("what llama-server said is left out of the log by its length", () => {
  const error = new AssistantError(
    "llama-server answered 500: Failed to parse: my secret answered",
    { quoted: "Failed to parse: my secret answered" },
  );
  assert.equal(
    error.loggable,
    "llama-server answered 500: [35 bytes quoted from llama-server, not logged]",
  );
  assert.equal(
    describeSafely(error),
    "AssistantError: llama-server answered 500: [35 bytes quoted from llama-server, not logged]",
  );
  // A quote that repeats words of the message's own start.
  const echo = new AssistantError("llama-server error: llama-server", {
    quoted: "llama-server",
  });
  assert.equal(
    echo.loggable,
    "llama-server error: [12 bytes quoted from llama-server, not logged]",
  );
  assert.equal(
    new AssistantError("no model loaded").loggable,
    "no model loaded",
  );
});
