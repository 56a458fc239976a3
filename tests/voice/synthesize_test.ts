import assert from "node:assert/strict";
import { join } from "node:path";
import { AssistantError } from "../../src/base/errors.ts";
import type { VoiceSettings } from "../../src/voice/settings.ts";
import { player, synthesizer } from "../../src/voice/synthesize.ts";
import { isWav, wavData } from "../../src/voice/wav.ts";
import {
  defaultSettings,
  espeakMissing,
  PLAY_SH,
  playLog,
  spokenText,
  TTS_SH,
  VoiceHome,
} from "./harness.ts";

function settings(change: Partial<VoiceSettings>): VoiceSettings {
  return { ...defaultSettings(), ...change };
}

const never = new AbortController().signal;
const missing = espeakMissing();

Deno.test({
  name: "the default tts_command, espeak-ng, synthesises a real WAV",
  ignore: missing !== null,
  fn: async () => {
    const synthesize = synthesizer(settings({}))!;
    const wav = await synthesize("Hello there, this is a test.", never);
    assert.ok(isWav(wav));
    const data = wavData(wav)!;
    assert.ok(data.length > 10_000, `${data.length} bytes of samples`);
    // Written to a pipe, its sizes were placeholders: now they are real.
    const view = new DataView(wav.buffer, wav.byteOffset);
    assert.equal(view.getUint32(4, true), wav.length - 8);
    assert.equal(view.getUint32(data.offset - 4, true), data.length);
  },
});
if (missing !== null) {
  // deno-lint-ignore no-console
  console.log(`skipped the espeak-ng test: ${missing}`);
}

Deno.test("tts_command: the text goes on stdin and the WAV comes from stdout", async () => {
  await using home = await VoiceHome.create();
  const synthesize = synthesizer(
    settings({ tts_command: [TTS_SH, home.ttsLog] }),
  )!;
  const wav = await synthesize("Speak this.", never);
  assert.equal(spokenText(wav), "Speak this.");
  assert.equal(new DataView(wav.buffer).getUint32(40, true), 11);
});

Deno.test("tts_command: a failure names the key and what the command said", async () => {
  await using home = await VoiceHome.create();
  const synthesize = synthesizer(
    settings({ tts_command: [TTS_SH, home.ttsLog] }),
  )!;
  await assert.rejects(
    synthesize("FAIL here", never),
    (error: Error) =>
      error instanceof AssistantError &&
      error.message ===
        `tts_command: ${TTS_SH} exited with 3: tts.sh: cannot say that`,
  );
});

Deno.test("tts_url: posts model, input, voice and wav to /v1/audio/speech", async () => {
  const bodies: unknown[] = [];
  const wav = new Uint8Array(
    [..."RIFF\0\0\0\0WAVE"].map((c) => c.charCodeAt(0)),
  );
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      if (new URL(request.url).pathname !== "/v1/audio/speech") {
        return new Response("no", { status: 404 });
      }
      bodies.push(await request.json());
      return new Response(wav, { headers: { "content-type": "audio/wav" } });
    },
  );
  const synthesize = synthesizer(
    settings({
      tts_url: `http://127.0.0.1:${server.addr.port}`,
      tts_model: "kokoro",
      tts_voice: "af_heart",
      tts_command: ["false"],
    }),
  )!;
  assert.deepEqual(await synthesize("Hello.", never), wav);
  assert.deepEqual(bodies, [{
    model: "kokoro",
    input: "Hello.",
    voice: "af_heart",
    response_format: "wav",
  }]);
});

Deno.test("tts_url: an error status is told with the server's message", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json({ detail: "voice not found" }, { status: 400 }),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const synthesize = synthesizer(settings({ tts_url: base }))!;
  await assert.rejects(
    synthesize("Hello.", never),
    new RegExp(
      `tts_url: the speech server at ${base} answered 400: voice not found`,
    ),
  );
});

Deno.test("play_command: the WAV goes on stdin; a missing player is named with its key", async () => {
  await using home = await VoiceHome.create();
  const play = player(settings({ play_command: [join(home.dir, "nothing")] }));
  await assert.rejects(
    play(new Uint8Array([1]), never),
    /^AssistantError: play_command: .*nothing is not installed/,
  );
  const real = player(
    settings({
      play_command: [PLAY_SH, home.playLog, "0"],
    }),
  );
  await real(new Uint8Array([82, 73, 70, 70]), never);
  const entries = playLog(await Deno.readTextFile(home.playLog));
  assert.deepEqual(entries.map((e) => e.what), ["start", "end"]);
  assert.deepEqual(
    await Deno.readFile(entries[0]!.file!),
    new Uint8Array([82, 73, 70, 70]),
  );
});
