/**
 * Records what the built llama-server answers where the fake was found to
 * differ, into `tests/fixtures/llama-server/release_2026_09/` (or the folder
 * given): each request beside its answer (`.request.json`, the body as
 * `.json` or `.sse`, the headers as `.headers.txt`, taken with curl as the
 * other captures were). Model paths are rewritten to `/srv/models/…`.
 *
 * `deno run -A tests/real/capture.ts [folder]` (needs `deno task llama-build`)
 */
import { SPECIAL_TOKENS } from "../support/gguf_models.ts";
import { findBuild } from "./build.ts";
import { LlamaServer } from "./llama_server.ts";
import { modelPath, type Role } from "./models.ts";

const out = Deno.args[0] ??
  new URL("../fixtures/llama-server/release_2026_09/", import.meta.url)
    .pathname;
const build = findBuild();
if (build === null) {
  throw new Error("no llama-server build: deno task llama-build");
}
await Deno.mkdir(out, { recursive: true });

const PIXEL = "data:image/png;base64," +
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const SYSTEM = { role: "system", content: "You are a helpful assistant." };
const QUESTION = { role: "user", content: "What is the capital of Peru?" };
const CLOCK = {
  type: "function",
  function: {
    name: "clock",
    description: "The local time",
    parameters: { type: "object", properties: {}, required: [] },
  },
};
const OFF = { chat_template_kwargs: { enable_thinking: false } };

/** Sends one request with curl and writes what came back, paths rewritten. */
async function capture(
  server: LlamaServer,
  name: string,
  path: string,
  body?: Record<string, unknown>,
): Promise<string> {
  const args = ["-sS", "-D", "-", "--max-time", "60", `${server.url}${path}`];
  if (body !== undefined) {
    await Deno.writeTextFile(
      `${out}/${name}.request.json`,
      JSON.stringify(body, null, 1) + "\n",
    );
    args.push(
      "-H",
      "Content-Type: application/json",
      "-d",
      JSON.stringify(body),
    );
  }
  const result = await new Deno.Command("curl", { args, stdout: "piped" })
    .output();
  const text = new TextDecoder().decode(result.stdout)
    .replaceAll(/\/tmp\/da-real-models-\w+\//g, "/srv/models/");
  const split = text.indexOf("\r\n\r\n") + 4;
  const [head, answer] = [text.slice(0, split - 2), text.slice(split)];
  const sse = /content-type: text\/event-stream/i.test(head);
  await Deno.writeTextFile(`${out}/${name}.headers.txt`, head);
  await Deno.writeTextFile(`${out}/${name}.${sse ? "sse" : "json"}`, answer);
  return answer;
}

async function serve(
  role: Role,
  extra: string[],
  run: (server: LlamaServer) => Promise<void>,
): Promise<void> {
  const args = ["-m", await modelPath(build!, role), ...extra];
  await using server = await LlamaServer.start({ build: build!, args });
  await run(server);
}

await serve("shift", [], async (server) => {
  await capture(server, "get_props", "/props");
  await capture(server, "get_slots_idle", "/slots");
  await capture(server, "apply_template_thinking_off", "/apply-template", {
    messages: [SYSTEM, QUESTION, { role: "assistant", content: "Lima." }, {
      role: "user",
      content: "And of Chile?",
    }],
    ...OFF,
  });
  // Thinking off, the second turn reads the first reply again: the
  // generation prompt's empty think block is not in the history.
  const turn1 = {
    messages: [SYSTEM, QUESTION],
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: 16,
    ...OFF,
  };
  const sse = await capture(
    server,
    "cache_turn1_thinking_off",
    "/v1/chat/completions",
    turn1,
  );
  const reply = sse.split("\n").filter((line) => line.startsWith("data: {"))
    .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? "")
    .join("");
  await capture(server, "cache_turn2_thinking_off", "/v1/chat/completions", {
    ...turn1,
    messages: [...turn1.messages, { role: "assistant", content: reply }, {
      role: "user",
      content: "And of Chile?",
    }],
  });
  await capture(server, "stream_reasoning_budget8", "/v1/chat/completions", {
    messages: [SYSTEM, QUESTION],
    stream: true,
    max_tokens: 24,
    reasoning_budget_tokens: 8,
  });
  // "required" lets text come before the call: alone it does not make a
  // random model call; a bias on <tool_call> does.
  const tools = {
    messages: [SYSTEM, { role: "user", content: "What time is it?" }],
    stream: true,
    max_tokens: 24,
    tools: [CLOCK],
    tool_choice: "required",
    ...OFF,
  };
  await capture(
    server,
    "stream_tools_required_no_bias",
    "/v1/chat/completions",
    tools,
  );
  await capture(
    server,
    "stream_tools_required_logit_bias",
    "/v1/chat/completions",
    {
      ...tools,
      logit_bias: {
        [SPECIAL_TOKENS.toolCall]: 100,
        [SPECIAL_TOKENS.endToolCall]: 90,
        [SPECIAL_TOKENS.imEnd]: 100,
      },
    },
  );
  const picture = {
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: PIXEL } },
      ],
    }],
  };
  await capture(server, "err_image_no_mmproj_stream", "/v1/chat/completions", {
    ...picture,
    stream: true,
  });
  await capture(
    server,
    "err_image_no_mmproj_nonstream",
    "/v1/chat/completions",
    picture,
  );
  await capture(server, "err_embeddings_not_enabled", "/v1/embeddings", {
    input: "hello",
  });
});

await serve("embed", ["--embeddings", "--pooling", "mean"], async (server) => {
  await capture(server, "embeddings_two_inputs", "/v1/embeddings", {
    input: ["The weather in Paris", "a second text"],
  });
  await capture(server, "embeddings_named_model", "/v1/embeddings", {
    input: "one text",
    model: "embedder",
  });
  await capture(server, "get_props_embeddings", "/props");
  // One input longer than the physical batch (512 tokens): a mean-pooled
  // input cannot be split, so the whole request fails.
  await capture(server, "err_embeddings_too_large", "/v1/embeddings", {
    input: ["short", "a ".repeat(600)],
  });
  await capture(server, "err_embeddings_empty", "/v1/embeddings", {
    input: ["short", ""],
  });
});
