/**
 * The voice client listening, run as `main.ts voice` runs it, against a
 * scripted daemon on a real Unix socket and a fake transcription server:
 * what it asks, and every failure told without asking anything.
 */
import assert from "node:assert/strict";
import { runChat } from "../../src/clients/chat.ts";
import {
  FakeTranscriber,
  NO_MICROPHONE_SH,
  RECORD_SH,
  ScriptedDaemon,
  VoiceHome,
  VoiceRun,
} from "./harness.ts";

function listenLines(stt: string): string[] {
  return [
    `stt_url = "${stt}"`,
    `record_command = ${JSON.stringify([RECORD_SH])}`,
    "tts_command = []",
  ];
}

/** One listening round: on, wait for audio, off. */
async function speakInto(daemon: ScriptedDaemon, voice: VoiceRun, round = 1) {
  await daemon.listen(true);
  await voice.said.has("Recording", round);
  await daemon.listen(false);
}

const asks = (daemon: ScriptedDaemon) =>
  daemon.commands.filter((command) => command.type === "ask");

Deno.test("what was said while listening is transcribed and asked, with a ref", async () => {
  await using home = await VoiceHome.create();
  await using stt = new FakeTranscriber(["  Turn on the lights.  "]);
  await home.config('stt_model = "base.en"', ...listenLines(stt.url));
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await speakInto(daemon, voice);
  const ask = await daemon.command("ask");
  assert.equal(ask.text, "Turn on the lights.");
  assert.ok(typeof ask.ref === "string" && ask.ref !== "");
  const upload = stt.uploads[0]!;
  assert.equal(upload.model, "base.en");
  // The recorder wrote placeholder sizes to its pipe: the server gets real ones.
  const view = new DataView(upload.bytes.buffer);
  assert.equal(view.getUint32(4, true), upload.bytes.length - 8);
  assert.equal(view.getUint32(40, true), upload.bytes.length - 44);
  assert.ok(upload.bytes.length > 44);
  await voice.said.has("You: Turn on the lights.");
});

Deno.test("an empty transcript asks nothing; a server error is printed and asks nothing", async () => {
  await using home = await VoiceHome.create();
  await using stt = new FakeTranscriber([
    "   ",
    { status: 503, message: "loading model" },
  ]);
  await home.config(...listenLines(stt.url));
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await speakInto(daemon, voice, 1);
  await voice.said.has("Heard nothing");
  await speakInto(daemon, voice, 2);
  const warning = await voice.warned.has("Nothing was asked");
  assert.match(
    warning,
    /stt_url: the transcription server at .* answered 503: loading model/,
  );
  assert.equal(stt.uploads.length, 2);
  assert.deepEqual(asks(daemon), []);
});

Deno.test("a transcription server that is down is printed and nothing is asked", async () => {
  await using home = await VoiceHome.create();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  await home.config(...listenLines(`http://127.0.0.1:${port}`));
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await speakInto(daemon, voice, 1);
  const warning = await voice.warned.has("Nothing was asked");
  assert.match(
    warning,
    /stt_url: cannot reach the transcription server at http:\/\/127\.0\.0\.1:\d+/,
  );
  // A second round goes the same way: the first sent nothing on the way.
  await speakInto(daemon, voice, 2);
  await voice.warned.has("Nothing was asked", 2);
  assert.deepEqual(asks(daemon), []);
});

Deno.test("no microphone: the failure names record_command and listening is turned back off", async () => {
  await using home = await VoiceHome.create();
  await using stt = new FakeTranscriber(["never"]);
  await home.config(
    `stt_url = "${stt.url}"`,
    `record_command = ${JSON.stringify([NO_MICROPHONE_SH])}`,
    "tts_command = []",
  );
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.listen(true);
  const warning = await voice.warned.has("record_command");
  assert.match(warning, /audio open error: No such file or directory/);
  await daemon.command("listen");
  assert.equal(daemon.listening, false, "every client sees listening end");
  assert.deepEqual(stt.uploads, []);
  assert.deepEqual(asks(daemon), []);
});

Deno.test("listening with nothing to transcribe says which keys to set and turns it off", async () => {
  await using home = await VoiceHome.create();
  await home.config(`record_command = ${JSON.stringify([RECORD_SH])}`);
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.listen(true);
  await voice.warned.has("set stt_url or stt_command");
  const listen = await daemon.command("listen");
  assert.equal(listen.on, false);
});

Deno.test("hello with listening on starts recording at once; Enter toggles listening", async () => {
  await using home = await VoiceHome.create();
  await using stt = new FakeTranscriber(["First question", "Second question"]);
  await home.config(...listenLines(stt.url));
  await using daemon = ScriptedDaemon.start(home.socket);
  daemon.listening = true;
  const keys = new TransformStream<Uint8Array, Uint8Array>();
  const typing = keys.writable.getWriter();
  await using voice = new VoiceRun(home, { input: keys.readable });
  await voice.said.has("Recording");
  await typing.write(new TextEncoder().encode("\n"));
  assert.equal((await daemon.command("listen")).on, false);
  assert.equal((await daemon.command("ask")).text, "First question");
  await typing.write(new TextEncoder().encode("\n"));
  assert.equal((await daemon.command("listen", 2)).on, true);
  await voice.said.has("Recording", 2);
  await typing.write(new TextEncoder().encode("\n"));
  assert.equal((await daemon.command("ask", 2)).text, "Second question");
  await typing.close();
});

Deno.test("the daemon going away: the client waits, and a question heard meanwhile is asked once it is back", async () => {
  await using home = await VoiceHome.create();
  await using stt = new FakeTranscriber(["Asked while away"]);
  await home.config(...listenLines(stt.url));
  const first = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(first);
  await first.listen(true);
  await voice.said.has("Recording");
  await first.close();
  await voice.said.has("The daemon went away");
  await voice.said.has("the question goes once it is back");
  await using second = ScriptedDaemon.start(home.socket);
  await voice.said.has("The daemon is back");
  assert.equal((await second.command("ask")).text, "Asked while away");
  assert.deepEqual(first.commands.filter((c) => c.type === "ask"), []);
  assert.equal(await voice.stop(), 0);
});

Deno.test("no daemon at start: the same message and exit code as chat", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"');
  const voice = new VoiceRun(home);
  const code = await voice.exit;
  const chatErrors: string[] = [];
  const chatCode = await runChat([], {
    env: home.env,
    writeError: (text) => chatErrors.push(text),
    input: ReadableStream.from([]),
    terminal: false,
    signals: false,
  });
  assert.equal(code, 2);
  assert.equal(code, chatCode);
  assert.deepEqual(voice.warned.all.map((line) => line + "\n"), chatErrors);
  assert.match(
    voice.warned.all[0]!,
    /no daemon answers on .*desktop-assistant\.sock/,
  );
});
