/**
 * Files with a question over the daemon's real socket (13.2): a refused
 * file leaves the connection open, WebP and GIF pictures reach the model
 * when their bytes are what they claim, and a file's name is a label that
 * is shown as given and never used as a path.
 */
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { exists } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import {
  isIdle,
  type Received,
  type SocketClient,
} from "../support/socket_client.ts";

const fixture = (name: string) =>
  Deno.readFile(new URL(`../fixtures/files/${name}`, import.meta.url));
const PNG = await fixture("red.png");
const WEBP = await fixture("dot.webp");
const GIF = await fixture("dot.gif");
const b64 = (text: string) => new TextEncoder().encode(text).toBase64();
/** The end of a turn, or a refusal of the question. */
const idleOrError = (e: Received) => isIdle(e) || e.type === "error";

type Part = { type: string; text?: string; image_url?: { url: string } };
type ChatBody = { messages: { role: string; content: string | Part[] }[] };

/** The last user message of a chat request the fake received. */
function question(llm: FakeLlm, index: number): string | Part[] {
  return (llm.chats[index]!.body as ChatBody).messages.at(-1)!.content;
}

async function connected(daemon: LocalDaemon): Promise<SocketClient> {
  const client = await daemon.connect();
  await client.next("hello");
  return client;
}

/** A model that reads pictures, answering each question plainly. */
function visionLlm(): Promise<FakeLlm> {
  return FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", vision: true }],
    defaultScript: reply({ content: ["Seen."] }),
  });
}

Deno.test("a file refused with bad_file leaves the connection open: the next command on it is answered, and nothing was asked or stored", async () => {
  await using llm = await visionLlm();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await connected(daemon);
  const refused = [
    // Refused by the daemon once decoded: PNG bytes said to be a GIF.
    {
      file: { name: "chart.gif", mime: "image/gif", data: PNG.toBase64() },
      message: "chart.gif: its bytes are not a picture of type image/gif",
    },
    // Refused as the line is read: not base64.
    {
      file: { name: "notes.txt", mime: "text/plain", data: "not base64!" },
      message: "notes.txt: data is not valid base64",
    },
  ];
  for (const [i, { file, message }] of refused.entries()) {
    await client.send({
      type: "ask",
      text: "What is this?",
      files: [file],
      ref: `bad ${i}`,
    });
    // The answer comes first, and alone: no user, no state.
    const error = await client.next("error");
    assert.equal(error.code, "bad_file");
    assert.equal(error.ref, `bad ${i}`);
    assert.equal(error.message, message);
    await client.send({ type: "ping", ref: `after ${i}` });
    assert.equal((await client.next("pong")).ref, `after ${i}`);
  }
  assert.equal(client.ended, false);
  assert.deepEqual(llm.chats, [], "no request reached the model");
  // A question on the same connection is asked and answered.
  await client.send({
    type: "ask",
    text: "And these?",
    files: [{ name: "notes.txt", mime: "text/plain", data: b64("Hello") }],
    ref: "good",
  });
  const events = await client.until(isIdle);
  const user = events.find((e) => e.type === "user");
  assert.equal(user?.ref, "good");
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
  await client.send({ type: "list", ref: "list" });
  const listed = await client.next("conversations");
  assert.equal(listed.items.length, 1, "only the question asked is kept");
});

Deno.test("a WebP and a GIF whose bytes are what they claim reach the model as data URLs of their type", async () => {
  await using llm = await visionLlm();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await connected(daemon);
  await client.send({
    type: "ask",
    text: "Compare them",
    files: [
      { name: "dot.webp", mime: "image/webp", data: WEBP.toBase64() },
      { name: "dot.gif", mime: "image/gif", data: GIF.toBase64() },
    ],
  });
  const events = await client.until(idleOrError);
  assert.deepEqual(events.filter((e) => e.type === "error"), []);
  const user = events.find((e) => e.type === "user");
  assert.deepEqual(user?.files, [
    { name: "dot.webp", mime: "image/webp", bytes: WEBP.length, kind: "image" },
    { name: "dot.gif", mime: "image/gif", bytes: GIF.length, kind: "image" },
  ]);
  const parts = question(llm, 0) as Part[];
  assert.deepEqual(parts.slice(1), [
    {
      type: "image_url",
      image_url: { url: `data:image/webp;base64,${WEBP.toBase64()}` },
    },
    {
      type: "image_url",
      image_url: { url: `data:image/gif;base64,${GIF.toBase64()}` },
    },
  ]);
});

/** Every path under `dir`, its own included. */
async function walk(dir: string): Promise<string[]> {
  const found = [dir];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await walk(path));
    else found.push(path);
  }
  return found;
}

Deno.test("a file's name is a label: shown, sent and kept as given, never a path the daemon reads or writes", async () => {
  const outside = await Deno.makeTempDir({ prefix: "da-names-" });
  try {
    const onDisk = join(outside, "secret.txt");
    await Deno.writeTextFile(onDisk, "ON DISK: never to be read");
    const files = [
      // An existing file's path, with other bytes than the file holds.
      { name: onDisk, mime: "text/plain", data: b64("Sent bytes.") },
      // A path where nothing is.
      {
        name: join(outside, "written.txt"),
        mime: "text/plain",
        data: b64("Second."),
      },
      // Out of wherever the daemon would resolve it.
      { name: "../../escape.txt", mime: "text/plain", data: b64("Third.") },
      {
        name: join(outside, "dot.gif"),
        mime: "image/gif",
        data: GIF.toBase64(),
      },
    ];
    const names = files.map((file) => file.name);
    await using llm = await visionLlm();
    await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
    const before = await walk(daemon.home);
    await using client = await connected(daemon);
    await client.send({ type: "ask", text: "Read these", files });
    const events = await client.until(idleOrError);
    assert.deepEqual(events.filter((e) => e.type === "error"), []);
    const user = events.find((e) => e.type === "user") as {
      files?: { name: string }[];
    };
    assert.deepEqual(user.files?.map((f) => f.name), names, "shown as given");

    // Sent to the model under its name, with the bytes sent, not the disk's.
    const [text] = question(llm, 0) as Part[];
    assert.ok(
      text?.text?.includes(`File ${onDisk}:\n\`\`\`\nSent bytes.\n\`\`\``),
      text?.text,
    );
    assert.ok(text?.text?.includes("File ../../escape.txt:\n```\nThird.\n```"));
    assert.doesNotMatch(JSON.stringify(llm.chats), /ON DISK/);

    // Kept as given: the conversation and each file answer with the name.
    const id = events.find((e) => e.type === "done")!.id as number;
    await client.send({ type: "open", id });
    const opened = await client.next("conversation");
    assert.deepEqual(opened.turns[0]?.files?.map((f) => f.name), names);
    for (const [index, file] of files.entries()) {
      await client.send({ type: "file", conversation: id, turn: 0, index });
      const answered = await client.next("file");
      assert.equal(answered.name, file.name);
      assert.equal(answered.data, file.data);
    }
    await client.send({ type: "export", id, format: "markdown" });
    const markdown = (await client.next("export")).text;
    for (const name of names) assert.ok(markdown.includes(name), name);

    // Nothing was written or changed at any of those paths.
    assert.equal(await Deno.readTextFile(onDisk), "ON DISK: never to be read");
    assert.deepEqual(
      (await walk(outside)).sort(),
      [outside, onDisk].sort(),
    );
    assert.equal(await exists(resolve("../../escape.txt")), false);
    const made = (await walk(daemon.home)).filter((p) => !before.includes(p));
    const labels = ["secret.txt", "written.txt", "escape.txt", "dot.gif"];
    assert.deepEqual(
      made.filter((path) => labels.some((label) => path.endsWith(label))),
      [],
      `made: ${made.join(", ")}`,
    );
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
