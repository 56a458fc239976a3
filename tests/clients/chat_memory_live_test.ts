/**
 * chat's memories and search by meaning against the real daemon (memory
 * on, and embeddings from the fake llama-server where they are the
 * point): the commands' round trips as a piped chat prints them, the
 * model's remember, and proposals answered in a terminal, one kept, one
 * changed first, one answered by another client.
 */
import assert from "node:assert/strict";
import {
  clientArgs,
  clientEnv,
  ClientProcess,
  hasScript,
  PTY_SKIP,
  runClient,
  untimed,
} from "../support/client_harness.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";

function daemonWith(llm: FakeLlm, config: string): Promise<Daemon> {
  return Daemon.start({ llmUrl: llm.url, config });
}

/** A piped chat's transcript, its header and dates left out. */
async function piped(daemon: Daemon, input: string[]): Promise<string> {
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    clientEnv(daemon.paths.runtimeDir),
    input.join("\n") + "\n",
  );
  assert.equal(result.stderr, "");
  assert.equal(result.code, 0);
  return untimed(result.stdout).split("\n").slice(1).join("\n")
    .replace(/\d{4}-\d\d-\d\d/g, "<date>");
}

Deno.test("piped chat keeps, lists, rewrites, forgets and exports memories through the daemon", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await daemonWith(llm, `memory = "ask"\n`);
  const transcript = await piped(daemon, [
    "/remember Prefers metric units",
    "/remember Has a cat named Miso",
    "/memories",
    "/remember #1 Prefers SI units",
    "/forget 2",
    "y",
    "/forget 7",
    `/remember ${"x".repeat(501)}`,
    "/memories",
    "/memories export",
    "/search --meaning cat",
  ]);
  const shown = transcript
    // A question line wraps at 80 columns, even in a transcript.
    .replace(/^> \/remember\n( {2}x+\n)+/m, "> /remember <501 x>\n")
    .replace(/^(- Prefers SI units) \*\(<date> [^)]*\)\*$/m, "$1 (when)");
  assert.equal(
    shown,
    [
      "> /remember Prefers metric units",
      "memory #1 kept",
      "> /remember Has a cat named Miso",
      "memory #2 kept",
      "> /memories",
      "    #2  <date>  Has a cat named Miso",
      "    #1  <date>  Prefers metric units",
      "> /remember #1 Prefers SI units",
      "memory #1 rewritten",
      "> /forget 2",
      'forget memory #2 "Has a cat named Miso"? [y/N] yes',
      "memory #2 forgotten",
      "> /forget 7",
      "error: no such memory #7: /memories lists them by number",
      "> /remember <501 x>",
      "error: not kept: a memory is 1 to 500 characters",
      "> /memories",
      "    #1  <date>  Prefers SI units",
      "> /memories export",
      "# What the assistant knows about you",
      "",
      "- Prefers SI units (when)",
      "> /search --meaning cat",
      "error: search by meaning is off: set embed_url to an embeddings endpoint (/search without --meaning searches by words)",
      "",
    ].join("\n"),
  );
  assert.equal(llm.chats.length, 0, "no model request");
  assert.doesNotMatch(daemon.log, /Miso|metric|SI units/);
});

Deno.test("the model's remember asks as the fact it keeps; y keeps it", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    reply({
      toolCalls: [{
        name: "remember",
        arguments: JSON.stringify({ text: "Plays the cello" }),
      }],
    }),
    reply({ content: ["I will", " remember."] }),
  );
  await using daemon = await daemonWith(llm, `memory = "ask"\n`);
  const shown = await piped(daemon, [
    "Remember that I play the cello",
    "y",
    "/memories",
  ]);
  assert.match(
    shown,
    /^> Remember that I play the cello\nremember "Plays the cello"\? \[y\/N\] allowed\n\[tool\] remember … done\nI will remember\.\n\n> \/memories\n {4}#1 {2}<date> {2}Plays the cello/,
  );
});

Deno.test({
  name:
    `chat in a terminal asks each proposal: y keeps one, e changes one first, and one answered elsewhere closes${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(
      reply({ content: ["Noted."] }),
      // The proposal request, once the conversation has been idle a second.
      reply({
        content: [
          '{"facts": ["Prefers metric units", "Lives in Oslo", ',
          '"Has a cat named Miso"]}',
        ],
      }),
    );
    await using daemon = await daemonWith(
      llm,
      `memory = "ask"\nmemory_idle = 1\n`,
    );
    await using page = await daemon.connect();
    await page.next("hello");
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      {
        env: clientEnv(daemon.paths.runtimeDir),
        pty: true,
        size: { columns: 80, rows: 40 },
      },
    );
    let at = await chat.waitFor(/> \r/);
    await chat.type("I use metric units, live in Oslo, and have a cat\r");
    at = await chat.waitFor("Noted.", at);
    at = await chat.waitFor(
      'remember "Prefers metric units"? [y/N/e] ',
      at,
    );
    await chat.type("y");
    // The answer follows the question on its line.
    at = await chat.waitFor(/^kept\r\n/, at);
    at = await chat.waitFor('remember "Lives in Oslo"? [y/N/e] ', at);
    await chat.type("e");
    at = await chat.waitFor("remember> Lives in Oslo", at);
    await chat.type(" (Norway)\r");
    at = await chat.waitFor("[kept]", at);
    at = await chat.waitFor('remember "Has a cat named Miso"? [y/N/e] ', at);
    // The page refuses it while chat asks.
    const proposed = (await page.until((e) => e.type === "proposed")).at(-1);
    const items = (proposed as { items: { proposal: string; text: string }[] })
      .items;
    const cat = items.find((item) => item.text === "Has a cat named Miso")!;
    await page.send({ type: "refuse", proposal: cat.proposal });
    at = await chat.waitFor(/^refused \(answered elsewhere\)\r\n/, at);
    at = await chat.waitFor(/> \r/, at);
    await chat.type("/memories\r");
    at = await chat.waitFor("Lives in Oslo (Norway) (from #1)", at);
    at = await chat.waitFor("Prefers metric units (from #1)", at);
    await chat.waitFor(/> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
    const listed = chat.stdout.slice(chat.stdout.lastIndexOf("/memories"));
    assert.doesNotMatch(listed, /Miso/, "refused, so not kept");
    // The second request was the proposal one, in the shape of a schema.
    const asked = llm.chats[1]?.body as { response_format?: { type?: string } };
    assert.equal(asked.response_format?.type, "json_schema");
    assert.doesNotMatch(daemon.log, /Oslo|Miso|metric/);
  },
});
