import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import { Recording } from "../../src/voice/recorder.ts";
import { completeWav, isWav, wavData } from "../../src/voice/wav.ts";
import { NO_MICROPHONE_SH, RECORD_SH, within } from "./harness.ts";

function sizes(wav: Uint8Array): { riff: number; data: number } {
  const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
  return { riff: view.getUint32(4, true), data: view.getUint32(40, true) };
}

Deno.test("a recording ended by SIGINT is a complete WAV with its real sizes", async () => {
  await using recording = Recording.start([RECORD_SH]);
  await within(recording.started, "the first audio");
  const wav = await recording.finish();
  assert.ok(isWav(wav));
  // record.sh writes placeholder sizes, as a recorder writing to a pipe does.
  assert.deepEqual(sizes(wav), { riff: wav.length - 8, data: wav.length - 44 });
  assert.ok(wav.length > 44, "holds samples");
  assert.equal((wav.length - 44) % 2, 0, "whole 16-bit frames only");
});

Deno.test("a recorder that fails on its own says why, naming record_command", async () => {
  await using recording = Recording.start([NO_MICROPHONE_SH]);
  await recording.exited;
  await assert.rejects(
    recording.finish(),
    (error: Error) =>
      error instanceof AssistantError &&
      error.message.startsWith("record_command:") &&
      error.message.includes("audio open error") &&
      error.message.includes("microphone"),
  );
});

Deno.test("a recorder that is not installed is named with its key", () => {
  assert.throws(
    () => Recording.start(["no-such-recorder-da", "-q"]),
    (error: Error) =>
      error instanceof AssistantError &&
      /^record_command: no-such-recorder-da is not installed/.test(
        error.message,
      ),
  );
});

Deno.test("a recorder that writes no WAV is told to", async () => {
  await using recording = Recording.start(["sh", "-c", "echo not audio"]);
  await recording.exited;
  await assert.rejects(
    recording.finish(),
    /record_command: sh wrote no WAV/,
  );
});

Deno.test("a recording past its size limit ends the recorder and keeps what fits", async () => {
  await using recording = Recording.start([RECORD_SH], { maxBytes: 2000 });
  await within(recording.exited, "the recorder to be ended at its limit");
  const wav = await recording.finish();
  assert.ok(recording.full);
  assert.ok(wav.length <= 2000);
  assert.deepEqual(sizes(wav), { riff: wav.length - 8, data: wav.length - 44 });
});

Deno.test("completeWav sets placeholder sizes and cuts a partial frame", () => {
  // espeak-ng --stdout to a pipe: sizes 0x7ffff024 and 0x7ffff000.
  const header = [
    ..."RIFF",
    "\x24",
    "\xf0",
    "\xff",
    "\x7f",
    ..."WAVEfmt ",
  ].map((c) => c.charCodeAt(0));
  const fmt = [16, 0, 0, 0, 1, 0, 1, 0, 0x22, 0x56, 0, 0, 0x44, 0xac, 0, 0];
  const align = [2, 0, 16, 0];
  const data = [..."data"].map((c) => c.charCodeAt(0));
  const wav = new Uint8Array([
    ...header,
    ...fmt,
    ...align,
    ...data,
    0x00,
    0xf0,
    0xff,
    0x7f,
    1,
    2,
    3,
    4,
    5,
  ]);
  const fixed = completeWav(wav);
  assert.equal(fixed.length, 48);
  assert.deepEqual(sizes(fixed), { riff: 40, data: 4 });
  assert.deepEqual(wavData(fixed), { offset: 44, length: 4 });
  const text = new TextEncoder().encode("not a wav");
  assert.equal(completeWav(text), text);
});
