import assert from "node:assert/strict";
import {
  AssistantError,
  loggedName,
  withSafeMessage,
} from "../../src/base/errors.ts";
import { describeError } from "../../src/base/log.ts";

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
    describeError(error),
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

Deno.test("a file's name in an error's message is told to the client and left out of the log by its length", () => {
  const name = "divorce papers.pdf";
  const error = new AssistantError(`${name}: its converter was stopped`, {
    code: "convert_failed",
    forLog: `${loggedName(name)}: its converter was stopped`,
  });
  assert.equal(error.message, "divorce papers.pdf: its converter was stopped");
  assert.equal(
    describeError(error),
    "AssistantError: (a name of 18 characters): its converter was stopped",
  );
});

Deno.test("the log quotes no message of an error it cannot know safe: its class and where it was thrown instead", () => {
  const described = describeError(
    new SyntaxError("Unexpected token in 'my diary'"),
  );
  assert.match(described, /^SyntaxError at .*errors_test\.ts:\d+:\d+\)?$/);
  assert.doesNotMatch(described, /diary/);
  // A message of several lines, one of them shaped like a frame.
  const sly = describeError(new Error("my diary\n    at secretPlace (x:1:1)"));
  assert.match(sly, /^Error at .*errors_test\.ts:\d+:\d+\)?$/);
  assert.doesNotMatch(sly, /diary|secretPlace/);
  // A value thrown that is no error at all: its type only.
  assert.equal(describeError("my diary"), "string");
  assert.equal(describeError(undefined), "undefined");
});

Deno.test("a message marked safe is quoted, and each cause is described by the same rule", () => {
  assert.equal(
    describeError(withSafeMessage(new TypeError('config.toml:2: key "x"'))),
    'TypeError: config.toml:2: key "x"',
  );
  const chained = new AssistantError("malformed stream", {
    cause: new SyntaxError("Unexpected token in 'my diary'", {
      cause: new AssistantError("no model loaded"),
    }),
  });
  const described = describeError(chained);
  assert.match(
    described,
    /^AssistantError: malformed stream \(cause: SyntaxError at [^)]*\)?\) \(cause: AssistantError: no model loaded\)$/,
  );
  assert.doesNotMatch(described, /diary/);
});

Deno.test("a chain of causes that loops is cut", () => {
  const first = new AssistantError("first");
  const second = new AssistantError("second", { cause: first });
  Object.assign(first, { cause: second });
  const described = describeError(first);
  assert.ok(described.endsWith("(cause: …)"), described);
  assert.equal(described.match(/\(cause: /g)?.length, 9);
});
