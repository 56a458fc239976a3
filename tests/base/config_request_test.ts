/** The `[request]` fields llama-server types: checked like the other keys, and sent as written when right. */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/base/config.ts";
import { REQUEST_FIELDS } from "../../src/base/config_schema.ts";
import { type Paths, resolvePaths } from "../../src/base/paths.ts";
import { describeError } from "../../src/base/log.ts";
import { XDG } from "../support/env_fixture.ts";

const PATHS: Paths = resolvePaths(XDG);
const FILE = "/srv/config/desktop-assistant/config.toml";

/** The message a file is refused with. */
function refusal(text: string): string {
  try {
    parseConfig(text, FILE, PATHS);
  } catch (error) {
    assert.ok(error instanceof TypeError, String(error));
    return error.message;
  }
  throw new Error(`accepted: ${text}`);
}

Deno.test("a [request] token limit written as a string is refused with the file, line, key and value, not sent to fail every question", () => {
  assert.equal(
    refusal(
      'llm_url = "http://127.0.0.1:8080"\n\n[request]\nmax_tokens = "60"\n',
    ),
    `${FILE}:4: key "request.max_tokens" must be an integer of tokens, or -1 for no limit, got string "60"`,
  );
});

Deno.test("each [request] field llama-server types refuses a wrong type or an out-of-range value, naming its line", () => {
  const cases = [
    "temperature = -0.5",
    'temperature = "0.7"',
    "top_p = 1.5",
    "min_p = -0.1",
    "top_k = 40.5",
    "n_predict = -2",
    "max_completion_tokens = true",
    'seed = "42"',
    "seed = 4294967296",
    "n_cache_reuse = -1",
    "repeat_penalty = []",
    "presence_penalty = nan",
    'frequency_penalty = "high"',
    "mirostat = 3",
    "stop = 5",
    "stop = [1, 2]",
    "samplers = 5",
    "dry_sequence_breakers = []",
    'logit_bias = "15043"',
    'logit_bias = [[15043, "up"]]',
    "logit_bias = [[15043]]",
    "logit_bias = { 15043 = true }",
    "grammar = 5",
    'json_schema = "{}"',
    'response_format = { type = "xml" }',
    'response_format = "json_object"',
    "chat_template_kwargs = 1",
    "reasoning_format = false",
    'cache_prompt = "yes"',
    "ignore_eos = 1",
  ];
  for (const line of cases) {
    const key = line.split(" = ")[0];
    const message = refusal(`# sampling\n[request]\n${line}\n`);
    assert.ok(
      message.startsWith(`${FILE}:3: key "request.${key}" must be `) &&
        message.includes(", got "),
      `${line}: ${message}`,
    );
  }
});

Deno.test("right [request] values load and are sent as written, unknown fields too", () => {
  const { config, warnings } = parseConfig(
    [
      "[request]",
      "temperature = 0.7",
      "top_k = 0",
      "max_tokens = -1",
      "seed = -1",
      'stop = ["</s>", "User:"]',
      'samplers = "kpt"',
      'logit_bias = [[15043, 1.0], ["Hello", false]]',
      'response_format = { type = "json_object", schema = { type = "string" } }',
      'grammar = "root ::= \\"yes\\" | \\"no\\""',
      "mirostat = 2",
      "cache_prompt = false",
      'my_server_option = "kept"',
      "[request.chat_template_kwargs]",
      'reasoning_effort = "low"',
    ].join("\n"),
    FILE,
    PATHS,
  );
  assert.deepEqual(warnings, []);
  assert.deepEqual(JSON.parse(JSON.stringify(config.request)), {
    temperature: 0.7,
    top_k: 0,
    max_tokens: -1,
    seed: -1,
    stop: ["</s>", "User:"],
    samplers: "kpt",
    logit_bias: [[15043, 1], ["Hello", false]],
    response_format: { type: "json_object", schema: { type: "string" } },
    grammar: 'root ::= "yes" | "no"',
    mirostat: 2,
    cache_prompt: false,
    my_server_option: "kept",
    chat_template_kwargs: { reasoning_effort: "low" },
  });
  const table = parseConfig(
    "[request.logit_bias]\n15043 = -1.5\nHello = false\n",
    FILE,
    PATHS,
  );
  assert.deepEqual({ ...table.config.request.logit_bias as object }, {
    15043: -1.5,
    Hello: false,
  });
});

Deno.test("a [request] field written inline or dotted is refused at the line that holds it", () => {
  assert.match(
    refusal('model = "m"\nrequest = { max_tokens = "60" }\n'),
    new RegExp(`^${FILE}:2: key "request\\.max_tokens" must be an integer`),
  );
  assert.match(
    refusal('model = "m"\n\nrequest.top_p = 2\n'),
    new RegExp(`^${FILE}:3: key "request\\.top_p" must be a number from 0`),
  );
});

Deno.test("a refused [request] value that may hold a secret is shown by its kind only", () => {
  for (
    const line of [
      'logit_bias = "sk-live-51a2"',
      'stop = { token = "sk-live-51a2" }',
      'response_format = { type = "sk-live-51a2" }',
    ]
  ) {
    let logged = "";
    try {
      parseConfig(`[request]\n${line}\n`, FILE, PATHS);
    } catch (error) {
      logged = describeError(error);
    }
    assert.match(logged, /key \\?"request\.\w+\\?" must be /, line);
    assert.doesNotMatch(logged, /sk-live/, line);
  }
});

Deno.test("a [request] field one slip away from a known one is warned about and still sent", () => {
  const { config, warnings } = parseConfig(
    "[request]\ntemprature = 0.5\nmax_token = 64\nmy_server_option = 1\n",
    FILE,
    PATHS,
  );
  assert.deepEqual(warnings, [
    `unknown key "request.temprature" in ${FILE}: did you mean "temperature"? (it is sent as written)`,
    `unknown key "request.max_token" in ${FILE}: did you mean "max_tokens"? (it is sent as written)`,
  ]);
  assert.deepEqual(JSON.parse(JSON.stringify(config.request)), {
    temprature: 0.5,
    max_token: 64,
    my_server_option: 1,
  });
});

Deno.test("docs/configuration.md lists every checked [request] field with what it must be, in the words of its error", async () => {
  const doc = await Deno.readTextFile(
    new URL("../../docs/configuration.md", import.meta.url),
  );
  const section = doc.split("### Checked `[request]` fields")[1]?.split(
    "\n## ",
  )[0] ?? "";
  const rows = section.split("\n").filter((line) => line.startsWith("| `"));
  const listed = new Map<string, string>();
  for (const row of rows) {
    const [names = "", mustBe = ""] = row.split("|").slice(1).map((cell) =>
      cell.trim()
    );
    for (const [, name] of names.matchAll(/`(\w+)`/g)) {
      listed.set(name!, mustBe.replaceAll("`", ""));
    }
  }
  assert.deepEqual(
    [...listed.keys()].sort(),
    Object.keys(REQUEST_FIELDS).sort(),
  );
  for (const [name, { expected }] of Object.entries(REQUEST_FIELDS)) {
    assert.equal(listed.get(name), expected, name);
  }
});
