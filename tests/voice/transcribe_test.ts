import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import type { VoiceSettings } from "../../src/voice/settings.ts";
import { transcriber } from "../../src/voice/transcribe.ts";
import { defaultSettings, FakeTranscriber } from "./harness.ts";

function settings(change: Partial<VoiceSettings>): VoiceSettings {
  return { ...defaultSettings(), ...change };
}

const WAV = new Uint8Array([..."RIFF0000WAVE"].map((c) => c.charCodeAt(0)));
const never = new AbortController().signal;

Deno.test("stt_url: the WAV goes as multipart file and model; the JSON text comes back", async () => {
  await using server = new FakeTranscriber(["  What time is it?\n"]);
  const transcribe = transcriber(
    settings({ stt_url: server.url, stt_model: "base.en" }),
  )!;
  assert.equal(await transcribe(WAV, never), "What time is it?");
  assert.equal(server.uploads.length, 1);
  const upload = server.uploads[0]!;
  assert.equal(upload.model, "base.en");
  assert.equal(upload.type, "audio/wav");
  assert.match(upload.name, /\.wav$/);
  assert.deepEqual(upload.bytes, WAV);
});

Deno.test("stt_url: a server that answers an error status is told with its message", async () => {
  await using server = new FakeTranscriber([
    { status: 500, message: "model not loaded" },
  ]);
  const transcribe = transcriber(settings({ stt_url: server.url }))!;
  await assert.rejects(
    transcribe(WAV, never),
    (error: Error) =>
      error instanceof AssistantError &&
      error.message ===
        `stt_url: the transcription server at ${server.url} answered 500: model not loaded`,
  );
});

Deno.test("stt_url: a server that is down is named, with the key to change", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const transcribe = transcriber(
    settings({ stt_url: `http://127.0.0.1:${port}` }),
  )!;
  await assert.rejects(
    transcribe(WAV, never),
    (error: Error) =>
      error instanceof AssistantError &&
      error.message.startsWith(
        `stt_url: cannot reach the transcription server at http://127.0.0.1:${port}`,
      ) && error.message.includes("change stt_url"),
  );
});

Deno.test("stt_command: the WAV goes on stdin, the text comes from stdout", async () => {
  // `wc -c` says how many bytes arrived: the whole WAV, through stdin.
  const transcribe = transcriber(settings({ stt_command: ["wc", "-c"] }))!;
  assert.equal(await transcribe(WAV, never), String(WAV.length));
});

Deno.test("stt_command: a failing command is told with its key and its last words", async () => {
  const transcribe = transcriber(
    settings({
      stt_command: [
        "sh",
        "-c",
        "cat >/dev/null; echo 'no model file' >&2; exit 4",
      ],
    }),
  )!;
  await assert.rejects(
    transcribe(WAV, never),
    /^AssistantError: stt_command: sh exited with 4: no model file$/,
  );
});

Deno.test("stt_url wins over stt_command; with neither there is no transcriber", async () => {
  await using server = new FakeTranscriber(["from the server"]);
  const both = transcriber(
    settings({ stt_url: server.url, stt_command: ["false"] }),
  )!;
  assert.equal(await both(WAV, never), "from the server");
  assert.equal(transcriber(settings({})), null);
});

Deno.test("an aborted transcription rejects with the abort and ends its command", async () => {
  const transcribe = transcriber(
    settings({ stt_command: ["sh", "-c", "exec sleep 30"] }),
  )!;
  const abort = new AbortController();
  const running = transcribe(WAV, abort.signal);
  abort.abort();
  await assert.rejects(running, (error: Error) => error.name === "AbortError");
});
