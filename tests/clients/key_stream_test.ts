import assert from "node:assert/strict";
import { type Key, KeyStream } from "../../src/clients/key_stream.ts";

async function keys(...chunks: string[]): Promise<Key[]> {
  const out: Key[] = [];
  const stream = ReadableStream.from(chunks).pipeThrough(new KeyStream());
  for await (const key of stream) out.push(key);
  return out;
}

const text = (value: string): Key => ({ name: "text", text: value });
const key = (name: Exclude<Key["name"], "text">): Key => ({ name }) as Key;

Deno.test("KeyStream decodes text runs, control keys and arrow sequences", async () => {
  assert.deepEqual(await keys("héllo\x1b[D\x7f\x01\x05\x15\x03\x04\r"), [
    text("héllo"),
    key("left"),
    key("backspace"),
    key("home"),
    key("end"),
    key("kill-start"),
    key("interrupt"),
    key("eof"),
    key("enter"),
  ]);
});

Deno.test("KeyStream holds an escape sequence split across reads", async () => {
  assert.deepEqual(await keys("a\x1b", "[", "A", "b\x1b[3", "~"), [
    text("a"),
    key("up"),
    text("b"),
    key("delete"),
  ]);
});

Deno.test("KeyStream treats \\r\\n as one Enter and drops other control bytes", async () => {
  assert.deepEqual(await keys("x\r\ny\t\x1b[99Xz"), [
    text("x"),
    key("enter"),
    text("y"),
    key("ignore"),
    text("z"),
  ]);
});

Deno.test("KeyStream gives a bracketed paste as one text key, newlines kept", async () => {
  assert.deepEqual(
    await keys("\x1b[200~line one\r\nline", " two\x1b[20", "1~\r"),
    [text("line one\nline two"), key("enter")],
  );
});
