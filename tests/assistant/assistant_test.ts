/** The brain alone: a real in-memory store, an injected model source, events collected. */
import assert from "node:assert/strict";
import { Assistant, type ModelSource } from "../../src/assistant/assistant.ts";
import type { Event } from "../../src/protocol/protocol.ts";
import type { Delta } from "../../src/llm/sse_stream.ts";
import { Store } from "../../src/store/store.ts";
import { TURN_CONFIG } from "../support/turn_config.ts";

const unusedModel: ModelSource = {
  chooseModel: () => Promise.reject(new Error("no model in this test")),
  chat: () => Promise.reject(new Error("no model in this test")),
};

function brain(store: Store, events: Event[] = []): Assistant {
  return new Assistant({
    store,
    llm: unusedModel,
    tools: [],
    emit: (event) => events.push(event),
    config: TURN_CONFIG,
  });
}

function fill(store: Store, count: number): number[] {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(
      store.saveTurn(null, {
        user: `question ${i}`,
        reply: "answer",
        tools: [],
        messages: [],
      }),
    );
  }
  return ids;
}

Deno.test("list without a limit and the list after a delete hold the newest 1,000", async () => {
  using store = new Store(":memory:");
  const ids = fill(store, 1005);
  using assistant = brain(store);

  const listed = await assistant.handle({ type: "list" });
  assert.ok(listed?.type === "conversations");
  assert.equal(listed.items.length, 1000);
  assert.equal(listed.items[0]!.id, ids.at(-1));

  const some = await assistant.handle({ type: "list", limit: 3 });
  assert.ok(some?.type === "conversations");
  assert.equal(some.items.length, 3);

  const afterDelete = await assistant.handle({ type: "delete", id: ids[0]! });
  assert.ok(afterDelete?.type === "conversations");
  assert.equal(afterDelete.items.length, 1000);
  assert.ok(!store.exists(ids[0]!));
});

Deno.test("open broadcasts the conversation; an unknown id is refused and changes nothing", async () => {
  using store = new Store(":memory:");
  const [id] = fill(store, 1);
  const events: Event[] = [];
  using assistant = brain(store, events);

  await assert.rejects(
    assistant.handle({ type: "open", id: 99 }),
    /no such conversation/,
  );
  assert.deepEqual(events, []);
  assert.equal(await assistant.handle({ type: "open", id: id! }), null);
  assert.deepEqual(events, [{
    type: "conversation",
    id,
    turns: [{ user: "question 0", reply: "answer", tools: [] }],
    summary: null,
    memories: 0,
  }]);
  const hello = assistant.hello();
  assert.ok(hello.type === "hello");
  assert.equal(hello.id, id);
});

Deno.test("settled waits for a stopped reply to wind down: shutdown's wait is real", async () => {
  using store = new Store(":memory:");
  const events: Event[] = [];
  const toolStarted = Promise.withResolvers<void>();
  const toolKilled = Promise.withResolvers<void>();
  const toolReturns = Promise.withResolvers<void>();
  using assistant = new Assistant({
    store,
    llm: {
      chooseModel: () =>
        Promise.resolve({ id: "m.gguf", router: false, nCtx: 4096 }),
      chat: () =>
        Promise.resolve(ReadableStream.from<Delta>([
          {
            kind: "tool_call",
            index: 0,
            id: "c1",
            name: "slow",
            arguments: "{}",
          },
          { kind: "finish", reason: "tool_calls" },
        ])),
    },
    tools: [],
    emit: (event) => events.push(event),
    config: TURN_CONFIG,
    // A tool that takes its time to end once killed, as a process does.
    runTool: async (_tools, _name, _args, options) => {
      options.signal?.addEventListener("abort", () => toolKilled.resolve());
      toolStarted.resolve();
      await toolReturns.promise;
      return {
        content: "",
        bytes: 0,
        lines: 0,
        durationMs: 1,
        status: "stopped",
      };
    },
  });
  await assistant.handle({ type: "ask", text: "Run the slow tool" });
  await toolStarted.promise;
  assistant.shutdown();
  await toolKilled.promise;
  assert.deepEqual(events.at(-2), { type: "done", id: null, stopped: true });

  const settled = assistant.settled().then(() => "settled");
  // Every promise that could settle by now has (one turn of the event loop).
  const early = await Promise.race([
    settled,
    new Promise<string>((resolve) => setTimeout(() => resolve("waiting"), 0)),
  ]);
  assert.equal(early, "waiting", "settled before the tool returned");
  toolReturns.resolve();
  assert.equal(await settled, "settled");
  assert.deepEqual(store.list(), [], "nothing of the stopped reply is saved");
});

/** A model source that streams `pieces`, one a millisecond, for every request; `after` runs once each is handed on. */
function streaming(pieces: string[], after = () => {}): ModelSource {
  return {
    chooseModel: () => Promise.resolve({ id: "m", router: false, nCtx: 4096 }),
    chat: () => {
      const left = [...pieces];
      return Promise.resolve(
        new ReadableStream<Delta>({
          async pull(controller) {
            await new Promise((resolve) => setTimeout(resolve, 1));
            const text = left.shift();
            if (text === undefined) {
              controller.enqueue({ kind: "finish", reason: "stop" });
              controller.close();
            } else {
              controller.enqueue({ kind: "content", text });
              queueMicrotask(after);
            }
          },
        }),
      );
    },
  };
}

Deno.test("a client that connects at any moment of a reply is shown exactly the tokens every client was sent", async () => {
  using store = new Store(":memory:");
  const sent: string[] = [];
  let done = false;
  const mismatches: string[] = [];
  using assistant = new Assistant({
    store,
    // A client connects right as a piece arrives, and at each step after.
    llm: streaming(["a", "b", "c", "d", "e"], () => look(50)),
    tools: [],
    config: TURN_CONFIG,
    emit: (event) => {
      if (event.type === "token") sent.push(event.delta);
      if (event.type === "done") done = true;
    },
  });
  // A hello taken at every microtask the reply leaves between its steps.
  // deno-lint-ignore prefer-const
  let look: (left: number) => void;
  look = (left: number) => {
    if (done || left === 0) return;
    const hello = assistant.hello();
    const shown = hello.type === "hello" ? hello.pending?.reply ?? "" : "";
    if (shown !== sent.join("")) mismatches.push(`${shown} / ${sent.join("")}`);
    queueMicrotask(() => look(left - 1));
  };
  await assistant.handle({ type: "ask", text: "hi" });
  await assistant.replyEnd();
  await assistant.settled();
  assert.deepEqual(mismatches, []);
  assert.equal(sent.join(""), "abcde");
});

Deno.test("a fault after the reply was saved still ends the turn: done, idle, and the next question starts clean", async () => {
  class FlakyStore extends Store {
    override lastTurnId(_id: number): number | null {
      throw new Error("disk gone");
    }
  }
  using store = new FlakyStore(":memory:");
  const events: Event[] = [];
  using assistant = new Assistant({
    store,
    llm: streaming(["Hi."]),
    tools: [],
    config: TURN_CONFIG,
    emit: (event) => events.push(event),
  });
  await assistant.handle({ type: "ask", text: "hello" });
  await assistant.replyEnd();
  assert.deepEqual(
    events.filter((e) => e.type === "done" || e.type === "state").map((e) =>
      e.type === "state" ? e.state : `done ${e.stopped}`
    ),
    ["thinking", "done false", "idle"],
  );
  assert.equal(assistant.replying, false);
  assert.equal(store.open(1)?.turns.length, 1);
  events.length = 0;
  await assistant.handle({ type: "ask", text: "again" });
  await assistant.replyEnd();
  await assistant.settled();
  assert.equal(events.some((e) => e.type === "done" && e.stopped), false);
});
