/**
 * The voice client speaking, run as `main.ts voice` runs it, against a
 * scripted daemon on a real Unix socket: which replies it speaks, that it
 * starts before the reply ends, and what silences it.
 */
import assert from "node:assert/strict";
import { isWav, wavData } from "../../src/voice/wav.ts";
import {
  espeakMissing,
  FakeTranscriber,
  PLAY_SH,
  playedTexts,
  playLog,
  RECORD_SH,
  ScriptedDaemon,
  VoiceHome,
  VoiceRun,
  waitForFile,
} from "./harness.ts";

/** Resolves to play.sh's `count`-th entry of kind `what`, once logged. */
function logged(home: VoiceHome, what: string, count = 1) {
  return waitForFile(
    home.playLog,
    (text) => playLog(text).filter((e) => e.what === what)[count - 1],
    `play.sh to log ${what} #${count}`,
  );
}

function turn(text: string, ref?: string) {
  return { type: "user", text, ...(ref ? { ref } : {}) };
}
const token = (delta: string) => ({ type: "token", delta });
const done = (stopped = false, ref?: string) => ({
  type: "done",
  id: stopped ? null : 1,
  stopped,
  ...(ref ? { ref } : {}),
});

Deno.test("a long reply's first chunk plays before its done", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', ...home.speechLines());
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.send(
    turn("Tell me a story", "other-1"),
    { type: "think", delta: "Reasoning that is never spoken. " },
    token("Once upon"),
    token(" a time."),
    token(" There"),
  );
  // Nothing more comes until the first sentence has started playing.
  await logged(home, "start");
  await daemon.send(token(" was a cat."), token(" The end"), done());
  await logged(home, "end", 3);
  assert.deepEqual(await playedTexts(home.playLog), [
    "Once upon a time.",
    "There was a cat.",
    "The end.",
  ]);
  assert.deepEqual(voice.warned.all, []);
});

Deno.test("speak = own: the reply to the client's own question, found by its ref, is spoken", async () => {
  await using home = await VoiceHome.create();
  await using stt = new FakeTranscriber(["What is the time?"]);
  await home.config(
    ...home.speechLines(),
    `stt_url = "${stt.url}"`,
    `record_command = ${JSON.stringify([RECORD_SH])}`,
  );
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.listen(true);
  await voice.said.has("Recording");
  await daemon.listen(false);
  const ask = await daemon.command("ask");
  assert.equal(ask.text, "What is the time?");
  assert.equal(typeof ask.ref, "string");
  await daemon.send(
    turn("What is the time?", ask.ref as string),
    token("It is noon."),
    done(false, ask.ref as string),
  );
  await logged(home, "end");
  assert.deepEqual(await playedTexts(home.playLog), ["It is noon."]);
});

Deno.test("speak = all: every reply in the conversation is spoken", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', ...home.speechLines());
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.send(
    turn("Typed in chat", "chat-1"),
    token("For everyone."),
    done(false, "chat-1"),
  );
  await logged(home, "end");
  assert.deepEqual(await playedTexts(home.playLog), ["For everyone."]);
});

Deno.test("a stop from any client silences playback: the player is ended, nothing of that reply plays after", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', ...home.speechLines(30));
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.send(
    turn("Go on"),
    token("The first sentence."),
    token(" The second sentence."),
    token(" The third"),
  );
  const playing = await logged(home, "start");
  await daemon.send(done(true));
  const killed = await logged(home, "killed");
  assert.equal(killed.pid, playing.pid);
  // The next reply is spoken; the stopped one's second sentence, ready by now, never is.
  await daemon.send(turn("Next"), token("Another reply."), done());
  await logged(home, "start", 2);
  assert.deepEqual(await playedTexts(home.playLog), [
    "The first sentence.",
    "Another reply.",
  ]);
});

Deno.test("a newer question silences the reply being spoken", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', ...home.speechLines(30));
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.send(turn("First"), token("Old answer. More old."));
  const old = await logged(home, "start");
  await daemon.send(turn("Second"), token("New answer. "));
  assert.equal((await logged(home, "killed")).pid, old.pid);
  await logged(home, "start", 2);
  assert.deepEqual(await playedTexts(home.playLog), [
    "Old answer.",
    "New answer.",
  ]);
});

Deno.test("listening turned on silences the reply being spoken", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'speak = "all"',
    ...home.speechLines(30),
    'stt_command = ["cat"]',
    `record_command = ${JSON.stringify([RECORD_SH])}`,
  );
  await using daemon = ScriptedDaemon.start(home.socket);
  await using voice = new VoiceRun(home);
  await voice.connected(daemon);
  await daemon.send(turn("Talk"), token("Something long. And more."));
  const playing = await logged(home, "start");
  await daemon.listen(true);
  assert.equal((await logged(home, "killed")).pid, playing.pid);
  await voice.said.has("Recording");
});

Deno.test({
  name: "espeak-ng, the default tts_command, speaks a reply for real",
  ignore: espeakMissing() !== null,
  fn: async () => {
    await using home = await VoiceHome.create();
    await home.config(
      'speak = "all"',
      `play_command = ${JSON.stringify([PLAY_SH, home.playLog, "0"])}`,
    );
    await using daemon = ScriptedDaemon.start(home.socket);
    await using voice = new VoiceRun(home);
    await voice.connected(daemon);
    await daemon.send(turn("Hi"), token("Hello from **espeak**."), done());
    const played = await logged(home, "start");
    const wav = await Deno.readFile(played.file!);
    assert.ok(isWav(wav));
    assert.ok(wavData(wav)!.length > 10_000, "real samples");
  },
});
if (espeakMissing() !== null) {
  // deno-lint-ignore no-console
  console.log(`skipped the espeak-ng test: ${espeakMissing()}`);
}
