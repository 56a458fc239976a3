import assert from "node:assert/strict";
import { join } from "node:path";
import { resolvePaths } from "../../src/base/paths.ts";
import {
  commandsInUse,
  DEFAULT_VOICE_SETTINGS,
  loadVoiceSettings,
  urlsInUse,
  voiceSettingsFrom,
} from "../../src/voice/settings.ts";
import { VoiceHome } from "./harness.ts";

const FILE = "/home/u/.config/desktop-assistant/config.toml";
const DIR = "/home/u/.config/desktop-assistant";
const env = (name: string) => name === "HOME" ? "/home/u" : undefined;

Deno.test("without a config file every voice key has its default", async () => {
  await using home = await VoiceHome.create();
  const settings = await loadVoiceSettings(resolvePaths(home.env), home.env);
  assert.deepEqual(settings, DEFAULT_VOICE_SETTINGS);
  assert.deepEqual(settings.record_command.slice(0, 2), ["arecord", "-q"]);
  assert.deepEqual(settings.tts_command, ["espeak-ng", "--stdout"]);
  assert.deepEqual(settings.play_command, ["aplay", "-q"]);
  assert.equal(settings.speak, "own");
});

Deno.test("the voice keys are read from config.toml beside the daemon's", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'llm_url = "http://127.0.0.1:9000"',
    'stt_url = "http://127.0.0.1:8178/"',
    'stt_model = "base.en"',
    'tts_url = "http://localhost:8880"',
    'tts_voice = "af_heart"',
    'speak = "all"',
    'play_command = ["paplay"]',
  );
  const settings = await loadVoiceSettings(resolvePaths(home.env), home.env);
  assert.equal(settings.stt_url, "http://127.0.0.1:8178");
  assert.equal(settings.stt_model, "base.en");
  assert.equal(settings.tts_url, "http://localhost:8880");
  assert.equal(settings.tts_voice, "af_heart");
  assert.equal(settings.speak, "all");
  assert.deepEqual(settings.play_command, ["paplay"]);
});

Deno.test("a command's path with a slash is taken from the config folder; ~/ from HOME; a bare name stays for PATH", () => {
  const settings = voiceSettingsFrom(
    {
      tts_command: ["bin/piper", "-f", "-"],
      stt_command: ["~/whisper/run", "x"],
      play_command: ["pw-play", "-"],
    },
    FILE,
    DIR,
    env,
  );
  assert.deepEqual(settings.tts_command, [join(DIR, "bin/piper"), "-f", "-"]);
  assert.deepEqual(settings.stt_command, ["/home/u/whisper/run", "x"]);
  assert.deepEqual(settings.play_command, ["pw-play", "-"]);
});

Deno.test("a wrong value stops with the file, the key and what it must be", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { record_command: "arecord" },
      /key "record_command" must be an array of strings/,
    ],
    [{ play_command: [""] }, /key "play_command" must be an array/],
    [
      { stt_url: "http://host:1/v1" },
      /key "stt_url" must be an http\(s\) base URL/,
    ],
    [{ tts_url: "ftp://host" }, /key "tts_url" must be an http\(s\) base URL/],
    [
      { speak: "loud" },
      /key "speak" must be "own" or "all", got string "loud"/,
    ],
    [{ tts_voice: "" }, /key "tts_voice" must be a non-empty string/],
    [
      { stt_model: 3 },
      /key "stt_model" must be a non-empty string, got number 3/,
    ],
  ];
  for (const [raw, message] of cases) {
    assert.throws(
      () => voiceSettingsFrom(raw, FILE, DIR, env),
      (error: Error) =>
        error instanceof TypeError && message.test(error.message) &&
        error.message.startsWith(FILE),
      JSON.stringify(raw),
    );
  }
});

Deno.test("a config file the daemon would refuse is refused the same way", async () => {
  await using home = await VoiceHome.create();
  await home.config("llm_url = 5");
  await assert.rejects(
    loadVoiceSettings(resolvePaths(home.env), home.env),
    (error: Error) =>
      error instanceof TypeError && error.message.includes('"llm_url"'),
  );
  await home.config("speak = ");
  await assert.rejects(
    loadVoiceSettings(resolvePaths(home.env), home.env),
    SyntaxError,
  );
});

Deno.test("only the commands and servers in use are granted", () => {
  const defaults = structuredClone(DEFAULT_VOICE_SETTINGS);
  // No transcription set: nothing listens, so nothing records.
  assert.deepEqual(commandsInUse(defaults).map((c) => c.key), [
    "tts_command",
    "play_command",
  ]);
  assert.deepEqual(urlsInUse(defaults), []);
  const served = voiceSettingsFrom(
    { stt_url: "http://127.0.0.1:8178", tts_url: "http://127.0.0.1:8880" },
    FILE,
    DIR,
    env,
  );
  assert.deepEqual(commandsInUse(served).map((c) => c.key), [
    "record_command",
    "play_command",
  ]);
  assert.deepEqual(urlsInUse(served).map((u) => u.key), ["stt_url", "tts_url"]);
  const commands = voiceSettingsFrom(
    { stt_command: ["whisper-cli"], stt_url: "", play_command: [] },
    FILE,
    DIR,
    env,
  );
  assert.deepEqual(commandsInUse(commands).map((c) => c.key), [
    "record_command",
    "stt_command",
  ]);
});
