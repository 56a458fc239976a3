/** A refused config file says everything wrong with it at once, a TOML slip in a person's words, and a misspelt key's likely meaning. */
import assert from "node:assert/strict";
import { configReport, parseConfig } from "../../src/base/config.ts";
import { type Paths, resolvePaths } from "../../src/base/paths.ts";
import { describeError } from "../../src/base/log.ts";
import { XDG } from "../support/env_fixture.ts";

const PATHS: Paths = resolvePaths(XDG);
const FILE = "/srv/config/desktop-assistant/config.toml";

/** The error a file is refused with. */
function refused(text: string): Error {
  try {
    parseConfig(text, FILE, PATHS);
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  throw new Error(`accepted: ${text}`);
}

Deno.test("every problem of a file is reported at once, in the file's order, each naming its line and key", () => {
  const error = refused(
    [
      'thinking = "no"',
      "history_turns = -1",
      'llm_url = "localhost:8080"',
      "[request]",
      'max_tokens = "60"',
      "top_p = 2",
      "[mcp.notes]",
      'command = "npx server"',
      "[mcp.web]",
      'command = ["web"]',
      "confirm = 1",
    ].join("\n"),
  );
  assert.ok(error instanceof AggregateError, String(error));
  const lines = [
    `${FILE}:1: key "thinking" must be a boolean, got string "no"`,
    `${FILE}:2: key "history_turns" must be a non-negative integer, got number -1`,
    `${FILE}:3: key "llm_url" must be an http(s) base URL such as http://127.0.0.1:8080 (no path, query or credentials), got a string of 14 characters`,
    `${FILE}:5: key "request.max_tokens" must be an integer of tokens, or -1 for no limit, got string "60"`,
    `${FILE}:6: key "request.top_p" must be a number from 0 to 1, got number 2`,
    `${FILE}:8: key "mcp.notes.command" must be a non-empty array of strings, e.g. ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]`,
    `${FILE}:11: key "mcp.web.confirm" must be true or false`,
  ];
  assert.deepEqual(error.errors.map((e: Error) => e.message), lines);
  assert.ok(error.errors.every((e: Error) => e instanceof TypeError));
  assert.equal(error.message, lines.join("\n"));
  assert.deepEqual(configReport(error), { problems: lines, warnings: [] });
  // The daemon's exit line carries them all.
  assert.equal(describeError(error), `AggregateError: ${lines.join("\n")}`);
});

Deno.test("a single problem is thrown as itself, a TypeError, with its report", () => {
  const error = refused("max_clients = 0\nnope = 1\n");
  assert.ok(error instanceof TypeError);
  const problem =
    `${FILE}:1: key "max_clients" must be an integer >= 1, got number 0`;
  assert.equal(error.message, problem);
  assert.deepEqual(configReport(error), {
    problems: [problem],
    warnings: [`unknown key "nope" in ${FILE}`],
  });
  assert.equal(configReport(new TypeError("x")), null);
});

Deno.test("an unknown key close to a known one gets a did you mean; an unrelated one does not", () => {
  const { warnings } = parseConfig(
    [
      "histroy_turns = 4",
      'llm-url = "http://127.0.0.1:8080"',
      "Thinkng = false",
      'tt_url = ""',
      "colour = 1",
      "tool = 1",
    ].join("\n"),
    FILE,
    PATHS,
  );
  assert.deepEqual(warnings, [
    `unknown key "histroy_turns" in ${FILE}: did you mean "history_turns"?`,
    `unknown key "llm-url" in ${FILE}: did you mean "llm_url"?`,
    `unknown key "Thinkng" in ${FILE}: did you mean "thinking"?`,
    `unknown key "tt_url" in ${FILE}: did you mean "stt_url" or "tts_url"?`,
    `unknown key "colour" in ${FILE}`,
    `unknown key "tool" in ${FILE}`,
  ]);
});

Deno.test("a table header without its ] says so, at its line, and how to close it", () => {
  const error = refused('model = "m"\n[request\ntemperature = 0.5\n');
  assert.ok(error instanceof SyntaxError);
  assert.equal(
    error.message,
    `${FILE}:2:9: this table header is not closed: end it with "]", as in [request]`,
  );
});

Deno.test("each TOML slip is worded for a person: what is wrong and the fix, at its line, quoting none of it", () => {
  const cases: [string, RegExp][] = [
    ["model = sk-live-51a2", /not one TOML knows: put text in double quotes/],
    ['model = "sk-live-51a2', /string is not closed: end it with the quote/],
    ['tools_dirs = ["sk-live-51a2"', /misses a "," between two items, or its/],
    ['x = { a = "sk-live-51a2" b = 1 }', /misses a ","/],
    [
      'model = "m" "sk-live-51a2"',
      /follows on this line: put each key = value/,
    ],
    ['model = "sk-live-51a2"\nmodel = "m"', /already set earlier in the file/],
    ["history_turns = 08", /may not start with 0/],
    ["history_turns = 1__0", /"_" in a number must stand between two digits/],
    ["tool_timeout = 1.2.3", /number is not valid/],
    ["history_turns = 99999999999999999999", /integer is too large/],
    ["when = 2026-13-45", /date or time is not valid/],
    ['model = "sk-live\\q51a2"', /backslash .* starts an escape/],
    ["history turns sk-live-51a2 = 4", /expected key = value or a \[table\]/],
    ["sk-live-51a2: 4", /expected key = value/],
    ["= 4", /no key before "="/],
    ["a..b = 1", /dotted key has an empty part/],
    ["[]", /table header has no name/],
    ["[mcp.sk-live-51a2 x]", /table name holds a character a name may not/],
    [
      "[[sk-live-51a2]",
      /array-of-tables header is not closed: end it with "]]"/,
    ],
    ["[sk-live-51a2", /table header is not closed/],
  ];
  for (const [line, words] of cases) {
    const error = refused(`# settings\n${line}\n`);
    assert.ok(error instanceof SyntaxError, `${line}: ${error}`);
    assert.match(error.message, new RegExp(`^${FILE}:\\d+:\\d+: `), line);
    assert.match(error.message, words, line);
    assert.doesNotMatch(error.message, /sk-live|Invalid TOML/, line);
    assert.ok(!error.message.includes("\n"), line);
  }
});

Deno.test("a syntax error is reported with the problems and warnings of the lines before it, and nothing after it is guessed at", () => {
  const error = refused(
    [
      'llm_url = "http://127.0.0.1:8080"',
      "histroy_turns = 4",
      'thinking = "no"',
      "",
      "[request",
      "temperature = 0.5",
      "colour = 1",
    ].join("\n"),
  );
  assert.ok(error instanceof AggregateError);
  assert.deepEqual(error.errors.map((e: Error) => e.name), [
    "TypeError",
    "SyntaxError",
  ]);
  assert.deepEqual(configReport(error), {
    problems: [
      `${FILE}:3: key "thinking" must be a boolean, got string "no"`,
      `${FILE}:5:9: this table header is not closed: end it with "]", as in [request]`,
    ],
    warnings: [
      `unknown key "histroy_turns" in ${FILE}: did you mean "history_turns"?`,
    ],
  });
});
