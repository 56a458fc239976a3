/**
 * Rules of what the assistant remembers (13.3) besides memory_test.ts's:
 * `memory = "off"` proposes nothing; a proposal request's reasoning is
 * never kept, in the history file or anywhere a client sees; a refused
 * fact stays refused after a restart; and the model's `remember` waits for
 * the user whatever the tools' approval settings say.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Event } from "../../src/protocol/protocol.ts";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { Brain, type EventOf, isIdle } from "../support/brain.ts";
import { exists } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { ManualClock } from "../support/manual_clock.ts";
import {
  answerDeltas,
  type Body,
  ScriptedModel,
} from "../support/scripted_model.ts";
import type { SocketClient } from "../support/socket_client.ts";

function ofType<T extends Event["type"]>(events: Event[], type: T) {
  return events.filter((e): e is EventOf<T> => e.type === type);
}

/** A proposal request: the only one that asks for a shape. */
function isProposal(body: Body | Record<string, unknown>): boolean {
  return body.response_format !== undefined;
}

/** A model that answers questions plainly and proposal requests with `facts()`. */
function model(facts: () => string) {
  return new ScriptedModel({
    answer: (body) =>
      answerDeltas(body, isProposal(body) ? facts() : "Sure, noted."),
  });
}

async function connected(daemon: LocalDaemon): Promise<SocketClient> {
  const client = await daemon.connect();
  await client.next("hello");
  return client;
}

Deno.test('with memory = "off" nothing is proposed: no request after turns, an idle spell or a switch, and no proposed event', async () => {
  const clock = new ManualClock();
  await using brain = await Brain.start({
    llm: model(() => '{"facts": ["Likes green tea"]}'),
    config: { memory: "off", memory_idle: 1 },
    assistant: { idleTimer: clock },
  });
  await brain.ask("I like green tea");
  await brain.ask("With a biscuit");
  // Idle far past memory_idle, then another conversation becomes current:
  // either would read the turns with memory = "ask".
  clock.advance(3_600_000);
  await brain.send({ type: "new" });
  await brain.assistant.settled();
  await brain.ask("Something else");
  clock.advance(3_600_000);
  await brain.send({ type: "new" });
  await brain.assistant.settled();
  assert.equal(brain.llm.bodies.length, 3, "the three questions alone");
  assert.deepEqual(brain.llm.bodies.filter(isProposal), []);
  assert.deepEqual(ofType(brain.events, "proposed"), []);
  assert.equal(
    (brain.assistant.hello() as EventOf<"hello">).proposed,
    undefined,
  );
});

Deno.test("a conversation left right after its reply, before the turn is counted, is read at once, not after memory_idle", async () => {
  const clock = new ManualClock();
  // Counts asked once the question's answer is given wait: the turn's own
  // count is still on its way when the user switches.
  let release: (() => void) | null = null;
  const llm: ScriptedModel = new ScriptedModel({
    answer(body) {
      if (isProposal(body)) {
        return answerDeltas(body, '{"facts": ["Likes green tea"]}');
      }
      release ??= llm.holdCounts();
      return answerDeltas(body, "Sure, noted.");
    },
  });
  await using brain = await Brain.start({
    llm,
    config: { memory: "ask", memory_idle: 120 },
    assistant: { idleTimer: clock },
  });
  await brain.send({ type: "ask", text: "I like green tea" });
  await brain.until(isIdle);
  await brain.send({ type: "new" });
  await brain.next("conversation");
  llm.countFreely();
  release!();
  const proposed = await brain.next("proposed");
  assert.deepEqual(proposed.items.map((p) => p.text), ["Likes green tea"]);
  assert.equal(clock.now(), 0, "no idle spell went by");
  assert.equal(clock.pending, 0, "no idle spell left running");
});

/** Every byte of every file under `dir`, as text where it is text. */
async function contents(dir: string): Promise<string> {
  let all = "";
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) all += await contents(path);
    else if (entry.isFile) {
      all += new TextDecoder().decode(await Deno.readFile(path));
    }
  }
  return all;
}

Deno.test("a proposal request's reasoning is never kept: not in the history file, not in any event, not in the log", async () => {
  const ways = [
    // llama-server's reasoning_content, as with --reasoning-format deepseek.
    { secret: "Zephyrine", inContent: false },
    // A think block inside the content, as with --reasoning-format none.
    { secret: "Quillibrand", inContent: true },
  ];
  for (const { secret, inContent } of ways) {
    await using llm = await FakeLlm.start({
      defaultScript: reply({ content: ["Sure", ", noted."] }),
    });
    await using daemon = await LocalDaemon.start({
      llmUrl: llm.url,
      config: 'memory = "ask"\nmemory_idle = 3600\nauto_title = false\n',
    });
    await using client = await connected(daemon);
    llm.enqueue(
      reply({ content: ["Green tea ", "is lovely."] }),
      reply({
        think: [
          `The user may have a kettle called ${secret}`,
          `, but ${secret} is a guess.`,
        ],
        thinkInContent: inContent,
        content: ['{"facts": ["Likes green tea"]}'],
      }),
    );
    await client.send({ type: "ask", text: "I like green tea" });
    await client.until(isIdle);
    // Another conversation becomes current: the last one is read at once.
    await client.send({ type: "new" });
    const proposed = (await client.until((e) => e.type === "proposed")).at(
      -1,
    ) as EventOf<"proposed">;
    assert.deepEqual(proposed.items.map((p) => p.text), ["Likes green tea"]);
    const request = llm.chats.at(-1)!;
    assert.ok(isProposal(request.body as Body), "the fake was asked for facts");
    await client.send({
      type: "accept",
      proposal: proposed.items[0]!.proposal,
    });
    await client.until((e) => e.type === "memories");
    // The next conversation carries the memory, and nothing of the reasoning.
    llm.enqueue(reply({ content: ["Tea it is."] }));
    await client.send({ type: "ask", text: "What should I drink?" });
    await client.until(isIdle);
    assert.doesNotMatch(JSON.stringify(llm.chats.at(-1)!.body), /kettle/);
    await daemon.stop();

    const kept = await contents(daemon.paths.dataDir);
    assert.match(kept, /Likes green tea/, "the file is read as it is kept");
    assert.doesNotMatch(kept, new RegExp(secret), "nothing of the reasoning");
    assert.doesNotMatch(JSON.stringify(client.received), /kettle/);
    assert.equal(
      client.received.some((e) => e.type === "think"),
      false,
      "no reasoning is shown",
    );
    assert.doesNotMatch(daemon.log, new RegExp(secret));
  }
});

Deno.test("a fact refused stays refused after a restart: proposed again, in other case and spacing, it is dropped", async () => {
  const clock = new ManualClock();
  let answer = '{"facts": ["Plays the cello"]}';
  await using brain = await Brain.start({
    llm: model(() => answer),
    config: { memory: "ask", memory_idle: 1 },
    assistant: { idleTimer: clock },
  });
  await brain.ask("I practised the cello today");
  clock.advance(1000);
  const [cello] = (await brain.next("proposed")).items;
  assert.equal(cello?.text, "Plays the cello");
  await brain.send({ type: "refuse", proposal: cello!.proposal });
  assert.equal((await brain.next("decided")).accepted, false);

  await brain.restart();
  answer = '{"facts": ["plays  the CELLO", "Owns a cat"]}';
  await brain.ask("More cello, and my cat listened");
  clock.advance(1000);
  const again = await brain.next("proposed");
  assert.deepEqual(again.items.map((p) => p.text), ["Owns a cat"]);
  assert.equal(brain.llm.bodies.filter(isProposal).length, 2);
  assert.equal(ofType(brain.events, "proposed").length, 2);
});

Deno.test("the model's remember waits for the user even where the tools' settings ask for nothing: confirm_tools empty, a tool file named remember with confirm = false", async () => {
  const tools = await Deno.makeTempDir({ prefix: "da-remember-" });
  try {
    const ran = join(tools, "ran.txt");
    await Deno.writeTextFile(
      join(tools, "remember.toml"),
      [
        'description = "Keeps a note without asking"',
        `command = ["sh", "-c", "echo \\"$0\\" >> ${ran}", "{text}"]`,
        "confirm = false",
        "[parameters.text]",
        'type = "string"',
        "required = true",
      ].join("\n"),
    );
    await using llm = await FakeLlm.start();
    await using daemon = await LocalDaemon.start({
      llmUrl: llm.url,
      toolsDirs: [tools],
      config: 'memory = "ask"\nconfirm_tools = []\nauto_title = false\n',
    });
    await using client = await connected(daemon);
    const remember = (text: string) =>
      reply({
        toolCalls: [{ name: "remember", arguments: JSON.stringify({ text }) }],
      });
    for (const allow of [false, true]) {
      llm.enqueue(
        remember(`Plays the cello ${allow}`),
        reply({ content: ["Done."] }),
      );
      await client.send({ type: "ask", text: "Remember I play the cello" });
      const events = await client.until((e) =>
        e.type === "confirm" || isIdle(e)
      );
      const confirm = events.at(-1) as EventOf<"confirm">;
      assert.equal(confirm.type, "confirm", "the call waits for the user");
      assert.equal(confirm.tool, "remember");
      assert.deepEqual(confirm.args, { text: `Plays the cello ${allow}` });
      // Nothing is kept or run while the user has not answered.
      assert.equal(events.some((e) => e.type === "memories"), false);
      assert.equal(events.some((e) => e.type === "tool"), false);
      await client.send({ type: "approve", call: confirm.call, allow });
      await client.until(isIdle);
    }
    const listed = await client.send({ type: "memories" }).then(() =>
      client.until((e) => e.type === "memories")
    );
    const items = (listed.at(-1) as EventOf<"memories">).items;
    assert.deepEqual(items.map((m) => m.text), ["Plays the cello true"]);
    const declined = (llm.chats[1]!.body as Body).messages.at(-1);
    assert.match(
      String(declined?.content),
      /^The user declined to run remember/,
    );
    assert.equal(await exists(ran), false, "the tool file never ran");
  } finally {
    await Deno.remove(tools, { recursive: true });
  }
});
