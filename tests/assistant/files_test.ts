/**
 * Files and pictures with a question, through the assistant: what the model
 * is sent, what every client is shown, what is kept and found again, and
 * what a refused question leaves (nothing).
 */
import assert from "node:assert/strict";
import { contentText } from "../../src/llm/chat_types.ts";
import type { Attachment, Event } from "../../src/protocol/protocol.ts";
import { Brain, type EventOf, isIdle } from "../support/brain.ts";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { running } from "../support/process_tree.ts";
import { convert, resolveConverters } from "../../src/tools/convert.ts";
import {
  answerDeltas,
  type Body,
  ScriptedModel,
} from "../support/scripted_model.ts";

const PNG = await Deno.readFile(
  new URL("../fixtures/files/red.png", import.meta.url),
);
const text = (s: string) => new TextEncoder().encode(s);
const SLOW_CONVERTER = new URL("../fixtures/convert/slow.sh", import.meta.url)
  .pathname;

const NOTES: Attachment = {
  name: "notes.txt",
  mime: "text/plain",
  data: text("The ferry leaves at 7:40 from pier 3."),
};
const PICTURE: Attachment = { name: "red.png", mime: "image/png", data: PNG };

function model(options: { vision?: boolean; nCtx?: number } = {}) {
  return new ScriptedModel({
    ...options,
    answer: (body) => answerDeltas(body, "Noted."),
  });
}

function ofType<T extends Event["type"]>(events: Event[], type: T) {
  return events.filter((e): e is EventOf<T> => e.type === type);
}

/** The question of a request: the last user message's content. */
function question(body: Body) {
  return body.messages.at(-1)!.content as unknown;
}

/** Sends a command and resolves to the error it is refused with. */
async function refusal(brain: Brain, command: Parameters<Brain["send"]>[0]) {
  const error = await brain.send(command).then(() => null, (e: unknown) => e);
  assert.ok(error instanceof Error, "refused");
  return error as Error & { code?: string };
}

Deno.test("a text file rides in the question fenced and named, every client is shown it, and it is kept with the turn", async () => {
  await using brain = await Brain.start({ llm: model() });
  await brain.send({ type: "ask", text: "When?", files: [NOTES] });
  const events = await brain.until(isIdle);
  const [user] = ofType(events, "user");
  const view = {
    name: "notes.txt",
    mime: "text/plain",
    bytes: 37,
    kind: "text",
  };
  assert.deepEqual(user?.files, [view]);
  const sent = String(question(brain.llm.bodies[0]!));
  assert.match(
    sent,
    /\] When\?\n\nFile notes\.txt:\n```\nThe ferry leaves at 7:40 from pier 3\.\n```$/,
  );
  const id = ofType(events, "done")[0]!.id!;
  assert.deepEqual(brain.store.open(id)!.turns[0]?.files, [view]);
  const opened = await brain.send({ type: "open", id });
  assert.equal(opened, null);
  const conversation = await brain.next("conversation");
  assert.deepEqual(conversation.turns[0]?.files, [view]);
});

Deno.test("a follow-up question sends the earlier file exactly as it was sent, so the server's cache holds", async () => {
  await using brain = await Brain.start({ llm: model({ vision: true }) });
  await brain.send({ type: "ask", text: "Look", files: [NOTES, PICTURE] });
  await brain.until(isIdle);
  await brain.ask("And then?");
  const [first, second] = brain.llm.bodies;
  const asked = first!.messages.at(-1)!;
  const replayed = second!.messages.find((m) =>
    m.role === "user" && contentText(m.content as never).includes("Look")
  );
  assert.deepEqual(replayed, asked, "byte for byte");
  // The picture went as an image_url part with its data URL.
  const parts = question(first!) as { type: string; image_url?: unknown }[];
  assert.deepEqual(parts.at(-1), {
    type: "image_url",
    image_url: { url: `data:image/png;base64,${PNG.toBase64()}` },
  });
});

Deno.test("after a switch to a model that reads no pictures, a follow-up sends an earlier picture as a line naming it", async () => {
  const options = {
    vision: true,
    answer: (body: Body) => answerDeltas(body, "Noted."),
  };
  await using brain = await Brain.start({ llm: new ScriptedModel(options) });
  await brain.send({ type: "ask", text: "Look", files: [PICTURE] });
  await brain.until(isIdle);
  options.vision = false;
  await brain.ask("And the sky?");
  const earlier = brain.llm.bodies[1]!.messages.find((m) =>
    m.role === "user" && contentText(m.content as never).includes("Look")
  );
  assert.equal(typeof earlier?.content, "string", "no image_url part");
  assert.match(
    earlier!.content as string,
    /\n\n\[picture red\.png: the model in use does not read pictures\]$/,
  );
  // A new question with a picture is still refused: it is about the picture.
  const error = await refusal(brain, {
    type: "ask",
    text: "And this one?",
    files: [PICTURE],
  });
  assert.equal(error.code, "no_vision");
});

Deno.test("a picture for a model that reads none is refused before any request: no turn, nothing stored", async () => {
  await using brain = await Brain.start({ llm: model({ vision: false }) });
  const error = await refusal(brain, {
    type: "ask",
    text: "What is this?",
    files: [PICTURE],
  });
  assert.equal(error.code, "no_vision");
  assert.equal(
    error.message,
    "the model in use does not read pictures: start llama-server with its --mmproj",
  );
  assert.deepEqual(brain.llm.bodies, []);
  assert.deepEqual(brain.events, [], "no user, no state");
  assert.deepEqual(brain.store.list(), []);
  // The connection's next question goes on as usual.
  await brain.ask("Plain question");
  assert.equal(brain.llm.bodies.length, 1);
});

/** A reading whose `application/pdf` converter is `argv`, run as the daemon runs one (the bounded runner, its time limit and kill). */
function convertingWith(argv: string[], seconds = 10) {
  const converters = resolveConverters(
    { convert: { "application/pdf": argv } },
    Deno.cwd(),
  );
  return {
    converts: (mime: string) => converters.has(mime),
    convert: (
      mime: string,
      name: string,
      bytes: Uint8Array,
      signal: AbortSignal,
    ) =>
      convert(converters.get(mime)!, name, bytes, {
        seconds,
        signal,
        helper: null,
      }),
  };
}

const PDF: Attachment = {
  name: "r.pdf",
  mime: "application/pdf",
  data: text("%PDF"),
};

Deno.test("a file that cannot be read, or a converter that fails, is refused with nothing stored and no turn", async () => {
  await using brain = await Brain.start({
    llm: model(),
    assistant: {
      reading: convertingWith(["sh", "-c", "cat >/dev/null; exit 3"]),
    },
  });
  const binary: Attachment = {
    name: "x.bin",
    mime: "application/octet-stream",
    data: new Uint8Array([0xff, 0x00, 0xfe]),
  };
  assert.equal(
    (await refusal(brain, { type: "ask", text: "?", files: [binary] })).code,
    "bad_file",
  );
  const failed = await refusal(brain, { type: "ask", text: "?", files: [PDF] });
  assert.equal(failed.code, "convert_failed");
  assert.equal(
    failed.message,
    "r.pdf: its converter failed with exit status 3",
  );
  assert.deepEqual(brain.events, []);
  assert.deepEqual(brain.llm.bodies, []);
  assert.deepEqual(brain.store.list(), []);
});

Deno.test("a converter still running ends when its asker is gone, or at stop: convert_failed, its process killed", async () => {
  const fifos = await Deno.makeTempDir({ prefix: "da-fifo-" });
  try {
    const fifo = `${fifos}/pid`;
    assert.ok(
      (await new Deno.Command("mkfifo", { args: [fifo] }).output())
        .success,
    );
    await using brain = await Brain.start({
      llm: model(),
      assistant: { reading: convertingWith([SLOW_CONVERTER, fifo], 600) },
    });
    const ask = { type: "ask" as const, text: "?", files: [PDF] };
    const gone = new AbortController();
    const asked = brain.assistant.handle(ask, gone.signal).catch((e) => e);
    let pid = Number((await Deno.readTextFile(fifo)).trim());
    gone.abort();
    const left = await asked as Error & { code?: string };
    assert.equal(left.code, "convert_failed");
    assert.equal(left.message, "r.pdf: its converter was stopped");
    assert.equal(running(pid), false);

    const stopped = brain.send(ask).catch((e) => e);
    pid = Number((await Deno.readTextFile(fifo)).trim());
    await brain.send({ type: "stop" });
    assert.equal((await stopped as { code?: string }).code, "convert_failed");
    assert.equal(running(pid), false);
    assert.deepEqual(brain.events, []);
    assert.deepEqual(brain.llm.bodies, []);
  } finally {
    await Deno.remove(fifos, { recursive: true });
  }
});

Deno.test("blank text with files is asked; retry sends the files again; edit keeps them, or drops them with files []", async () => {
  await using brain = await Brain.start({ llm: model() });
  await brain.send({ type: "ask", text: "", files: [NOTES] });
  await brain.until(isIdle);
  assert.match(String(question(brain.llm.bodies[0]!)), /File notes\.txt:/);
  await brain.send({ type: "retry" });
  await brain.until(isIdle);
  assert.match(String(question(brain.llm.bodies[1]!)), /File notes\.txt:/);
  await brain.send({ type: "edit", text: "Only this" });
  await brain.until(isIdle);
  assert.match(String(question(brain.llm.bodies[2]!)), /File notes\.txt:/);
  await brain.send({ type: "edit", text: "Nothing attached", files: [] });
  const edited = await brain.until(isIdle);
  assert.doesNotMatch(String(question(brain.llm.bodies[3]!)), /File /);
  assert.equal(ofType(edited, "user")[0]?.files, undefined);
  const id = ofType(edited, "done")[0]!.id!;
  assert.equal(brain.store.open(id)!.turns[0]?.files, undefined);
});

Deno.test("file answers a stored file's bytes; a place that names none is no_such_file", async () => {
  await using brain = await Brain.start({ llm: model({ vision: true }) });
  await brain.send({ type: "ask", text: "Both", files: [NOTES, PICTURE] });
  const events = await brain.until(isIdle);
  const id = ofType(events, "done")[0]!.id!;
  const picture = await brain.send({
    type: "file",
    conversation: id,
    turn: 0,
    index: 1,
  });
  assert.deepEqual(picture, {
    type: "file",
    conversation: id,
    turn: 0,
    index: 1,
    name: "red.png",
    mime: "image/png",
    data: PNG.toBase64(),
  });
  const notes = await brain.send({
    type: "file",
    conversation: id,
    turn: 0,
    index: 0,
  }) as EventOf<"file">;
  assert.equal(
    new TextDecoder().decode(Uint8Array.fromBase64(notes.data)),
    "The ferry leaves at 7:40 from pier 3.",
  );
  for (
    const [conversation, turn, index] of [[id, 0, 2], [id, 1, 0], [
      id + 9,
      0,
      0,
    ]]
  ) {
    const error = await refusal(brain, {
      type: "file",
      conversation: conversation!,
      turn: turn!,
      index: index!,
    });
    assert.equal(error.code, "no_such_file");
  }
});

Deno.test("search finds words inside attached text and names the file; export carries the files", async () => {
  await using brain = await Brain.start({ llm: model() });
  await brain.send({ type: "ask", text: "Keep this", files: [NOTES] });
  const events = await brain.until(isIdle);
  const id = ofType(events, "done")[0]!.id!;
  const results = await brain.send({ type: "search", q: "ferry", limit: 10 });
  const [hit] = (results as EventOf<"results">).items;
  assert.equal(hit?.id, id);
  assert.equal(hit?.file, "notes.txt");
  assert.match(hit?.snippet ?? "", /\*\*ferry\*\*/);
  // A word of the question is not from a file.
  const own = await brain.send({ type: "search", q: "keep", limit: 10 });
  assert.equal((own as EventOf<"results">).items[0]?.file, undefined);

  const markdown = await brain.send({ type: "export", id, format: "markdown" });
  assert.match(
    (markdown as EventOf<"export">).text,
    /\*File: notes\.txt\*\n\n```\nThe ferry leaves at 7:40 from pier 3\.\n```/,
  );
  const json = await brain.send({ type: "export", id, format: "json" });
  const turns = JSON.parse((json as EventOf<"export">).text).turns;
  assert.deepEqual(turns[0].files, [{
    name: "notes.txt",
    mime: "text/plain",
    bytes: 37,
    kind: "text",
    text: "The ferry leaves at 7:40 from pier 3.",
  }]);
});

Deno.test("a client that connects mid-reply is shown the question's files in hello.pending", async () => {
  const held = Promise.withResolvers<void>();
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer: async (body) => {
        await held.promise;
        return answerDeltas(body, "Late.");
      },
    }),
  });
  await brain.send({ type: "ask", text: "Read", files: [NOTES] });
  await brain.until((e) => e.type === "state" && e.state === "thinking");
  const hello = brain.assistant.hello() as EventOf<"hello">;
  assert.deepEqual(hello.pending?.files, [
    { name: "notes.txt", mime: "text/plain", bytes: 37, kind: "text" },
  ]);
  held.resolve();
  await brain.until(isIdle);
});

Deno.test("a question whose files do not fit the context even alone names the largest and its size", async () => {
  const big: Attachment = {
    name: "huge.log",
    mime: "text/plain",
    data: text("line of a long log file\n".repeat(2000)),
  };
  const small: Attachment = {
    name: "small.log",
    mime: "text/plain",
    data: text("line of a shorter log file\n".repeat(300)),
  };
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      nCtx: 2048,
      answer: (body) => answerDeltas(body, "x"),
    }),
  });
  // The largest is named wherever it is in the list.
  await brain.send({ type: "ask", text: "Summarise", files: [small, big] });
  const events = await brain.until(isIdle);
  const [error] = ofType(events, "error");
  assert.equal(error?.code, "question_too_long");
  assert.match(
    error?.message ?? "",
    /; its largest file, huge\.log, is about \d+ tokens$/,
  );
  assert.deepEqual(brain.store.list(), []);
});

Deno.test("the log of a question too long names no file: its code, and the name's length only", async () => {
  const big: Attachment = {
    name: "merger-plans-acme.log",
    mime: "text/plain",
    data: text("line of a long log file\n".repeat(2000)),
  };
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      nCtx: 2048,
      answer: (body) => answerDeltas(body, "x"),
    }),
  });
  await brain.send({ type: "ask", text: "Summarise", files: [big] });
  const [error] = ofType(await brain.until(isIdle), "error");
  assert.match(
    error?.message ?? "",
    /merger-plans-acme\.log/,
    "the client is told",
  );
  await brain.waitForLog(/reply failed/);
  assert.match(brain.log, /reply failed code=question_too_long /);
  assert.match(brain.log, /a name of 21 characters/);
  assert.doesNotMatch(brain.log, /merger|acme/);
});

Deno.test("against the fake llama-server: a model without --mmproj is refused a picture before any chat request; one with it reads it", async () => {
  for (const vision of [false, true]) {
    await using llm = await FakeLlm.start({
      models: [{ id: "/srv/models/tiny.gguf", vision }],
    });
    await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
    await using client = await daemon.connect();
    await client.next("hello");
    await client.send({
      type: "ask",
      text: "What is this?",
      files: [{ name: "red.png", mime: "image/png", data: PNG.toBase64() }],
      ref: "q",
    });
    if (!vision) {
      const error = await client.next("error");
      assert.equal(error.code, "no_vision");
      assert.equal(error.ref, "q");
      assert.deepEqual(llm.chats, []);
      continue;
    }
    const events = await client.until((e) =>
      e.type === "state" && e.state === "idle"
    );
    assert.equal(events.some((e) => e.type === "error"), false);
    const parts = (llm.chats[0]!.body as Body).messages.at(-1)!
      .content as unknown as {
        type: string;
      }[];
    assert.deepEqual(parts.map((p) => p.type), ["text", "image_url"]);
  }
});

Deno.test("against the fake llama-server: after no_vision, a server given --mmproj reads the picture without a daemon restart", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", vision: false }],
  });
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  const ask = {
    type: "ask" as const,
    text: "What is this?",
    files: [{ name: "red.png", mime: "image/png", data: PNG.toBase64() }],
  };
  await client.send({ ...ask, ref: "before" });
  assert.equal((await client.next("error")).code, "no_vision");
  // Restarted with its --mmproj between two questions, unseen by the daemon.
  llm.setModels([{ id: "/srv/models/tiny.gguf", vision: true }]);
  await client.send({ ...ask, ref: "after" });
  const events = await client.until((e) =>
    e.type === "state" && e.state === "idle"
  );
  assert.equal(events.some((e) => e.type === "error"), false);
  assert.equal(llm.chats.length, 1);
});
