import assert from "node:assert/strict";
import type { VoiceSettings } from "../../src/voice/settings.ts";
import { Speaker } from "../../src/voice/speaker.ts";
import {
  type Player,
  player,
  synthesizer,
} from "../../src/voice/synthesize.ts";
import {
  defaultSettings,
  PLAY_SH,
  playedTexts,
  playLog,
  spokenText,
  TTS_SH,
  VoiceHome,
  waitForFile,
  within,
} from "./harness.ts";

function settings(home: VoiceHome, hold = 0): VoiceSettings {
  return {
    ...defaultSettings(),
    tts_command: [TTS_SH, home.ttsLog],
    play_command: [PLAY_SH, home.playLog, String(hold)],
  };
}

/** A speaker on the fixture synthesiser and player, its reports kept. */
function speaker(home: VoiceHome, hold = 0, play?: Player) {
  const reports: string[] = [];
  const s = settings(home, hold);
  const speaker = new Speaker({
    synthesize: synthesizer(s)!,
    play: play ?? player(s),
    report: (message) => reports.push(message),
  });
  return { speaker, reports };
}

/** Resolves once play.sh has logged `count` starts. */
function started(home: VoiceHome, count = 1) {
  return waitForFile(
    home.playLog,
    (text) => {
      const starts = playLog(text).filter((e) => e.what === "start");
      return starts.length >= count ? starts[count - 1] : undefined;
    },
    `chunk ${count} to start playing`,
  );
}

/** The texts tts.sh was asked to synthesise, in order. */
async function synthesised(home: VoiceHome): Promise<string[]> {
  const text = await Deno.readTextFile(home.ttsLog).catch(() => "");
  return text.split("\n").filter((l) => l.startsWith("synth ")).map((l) =>
    l.split(" ").slice(2).join(" ")
  );
}

Deno.test("every chunk of a reply is played, in order", async () => {
  await using home = await VoiceHome.create();
  const { speaker: s, reports } = speaker(home);
  await using _speaker = s;
  s.begin();
  for (
    const token of [
      "First",
      " one.",
      " Second",
      " one!",
      " And",
      " the",
      " rest",
    ]
  ) {
    s.text(token);
  }
  s.end();
  await within(s.idle(), "the reply to be spoken");
  assert.deepEqual(await playedTexts(home.playLog), [
    "First one.",
    "Second one!",
    "And the rest.",
  ]);
  assert.deepEqual(reports, []);
});

Deno.test("chunk n+1 is synthesised while chunk n plays, and only one ahead", async () => {
  await using home = await VoiceHome.create();
  // A player that plays until the test lets it finish.
  const playing: { text: string; release: () => void }[] = [];
  let arrived: (() => void) | null = null;
  const play: Player = async (wav) => {
    const release = Promise.withResolvers<void>();
    playing.push({ text: spokenText(wav), release: release.resolve });
    arrived?.();
    await release.promise;
  };
  const nth = async (i: number) => {
    while (playing.length <= i) {
      const next = Promise.withResolvers<void>();
      arrived = next.resolve;
      await within(next.promise, `chunk ${i + 1} to play`);
    }
    return playing[i]!;
  };
  const { speaker: s } = speaker(home, 0, play);
  await using _speaker = s;
  s.begin();
  s.text("One. Two. Three. Four.");
  s.end();
  await nth(0);
  await waitForFile(
    home.ttsLog,
    (text) => text.includes("Two.") ? true : undefined,
    "chunk 2 to be synthesised",
  );
  // Chunk 1 still plays: chunk 2 is ready, chunk 3 waits its turn.
  assert.deepEqual(playing.map((p) => p.text), ["One."]);
  assert.deepEqual(await synthesised(home), ["One.", "Two."]);
  for (let i = 0; i < 4; i++) (await nth(i)).release();
  await within(s.idle(), "the reply to end");
  assert.deepEqual(playing.map((p) => p.text), [
    "One.",
    "Two.",
    "Three.",
    "Four.",
  ]);
});

Deno.test("silence ends the player at once and nothing of the reply plays after", async () => {
  await using home = await VoiceHome.create();
  const { speaker: s } = speaker(home, 30);
  await using _speaker = s;
  s.begin();
  s.text("The first sentence. The second sentence. The third");
  const playing = await started(home);
  s.silence();
  s.text(" sentence. More text that never arrives.");
  s.end();
  await within(s.idle(), "silence");
  const log = playLog(await Deno.readTextFile(home.playLog));
  assert.deepEqual(
    log.map((e) => [e.what, e.pid]),
    [["start", playing.pid], ["killed", playing.pid]],
  );
  assert.deepEqual(await playedTexts(home.playLog), ["The first sentence."]);
});

Deno.test("a chunk synthesised for an older reply is never played", async () => {
  await using home = await VoiceHome.create();
  const { speaker: s } = speaker(home, 30);
  await using _speaker = s;
  s.begin();
  s.text("Old reply. Its second part. ");
  await started(home);
  await waitForFile(
    home.ttsLog,
    (text) => text.includes("Its second part.") ? true : undefined,
    "the old reply's second chunk to be synthesised",
  );
  // A newer question: its reply begins while the old one's next chunk is ready.
  s.begin();
  s.text("New reply.");
  s.end();
  const second = await started(home, 2);
  assert.equal(spokenText(await Deno.readFile(second.file!)), "New reply.");
  s.silence();
  await within(s.idle(), "silence");
  assert.deepEqual(await playedTexts(home.playLog), [
    "Old reply.",
    "New reply.",
  ]);
  const log = playLog(await Deno.readTextFile(home.playLog));
  assert.equal(log.filter((e) => e.what === "killed").length, 2);
});

Deno.test("silence ends a synthesiser that is still working", async () => {
  await using home = await VoiceHome.create();
  const { speaker: s, reports } = speaker(home, 0);
  await using _speaker = s;
  s.begin();
  s.text("HANG on this one. ");
  await waitForFile(
    home.ttsLog,
    (text) => text.includes("synth") ? true : undefined,
    "the synthesiser to start",
  );
  s.silence();
  await within(s.idle(), "silence");
  const log = await Deno.readTextFile(home.ttsLog);
  assert.match(log, /^killed /m);
  assert.deepEqual(await playedTexts(home.playLog), []);
  assert.deepEqual(reports, []);
});

Deno.test("a chunk that fails to synthesise is told once, and the next is still spoken", async () => {
  await using home = await VoiceHome.create();
  const { speaker: s, reports } = speaker(home);
  await using _speaker = s;
  s.begin();
  s.text("One works. FAIL this one. FAIL again. Three works.");
  s.end();
  await within(s.idle(), "the reply to be spoken");
  assert.deepEqual(await playedTexts(home.playLog), [
    "One works.",
    "Three works.",
  ]);
  assert.equal(reports.length, 1, reports.join("\n"));
  assert.match(
    reports[0]!,
    /on screen.*tts_command: .* exited with 3: tts.sh: cannot say that/,
  );
});

Deno.test("a player that cannot run is told once for the reply", async () => {
  await using home = await VoiceHome.create();
  const reports: string[] = [];
  await using s = new Speaker({
    synthesize: synthesizer(settings(home))!,
    play: player({ ...settings(home), play_command: ["no-such-player-da"] }),
    report: (message) => reports.push(message),
  });
  s.begin();
  s.text("One. Two. Three.");
  s.end();
  await within(s.idle(), "the reply to end");
  assert.equal(reports.length, 1, reports.join("\n"));
  assert.match(reports[0]!, /play_command: no-such-player-da is not installed/);
});
