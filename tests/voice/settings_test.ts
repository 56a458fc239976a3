import assert from "node:assert/strict";
import { join } from "node:path";
import { resolvePaths } from "../../src/base/paths.ts";
import {
  commandsInUse,
  loadVoiceSettings,
  urlsInUse,
  type VoiceSettings,
} from "../../src/voice/settings.ts";
import { defaultSettings, VoiceHome } from "./harness.ts";

function load(home: VoiceHome): Promise<VoiceSettings> {
  return loadVoiceSettings(resolvePaths(home.env), home.env);
}

Deno.test("without a config file every voice key has its default", async () => {
  await using home = await VoiceHome.create();
  const settings = await load(home);
  assert.deepEqual(settings, defaultSettings());
  assert.deepEqual(settings.record_command, [
    "arecord",
    "-q",
    "-f",
    "S16_LE",
    "-r",
    "16000",
    "-c",
    "1",
    "-t",
    "wav",
  ]);
  assert.equal(settings.stt_url, "");
  assert.deepEqual(settings.stt_command, []);
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
  const settings = await load(home);
  assert.equal(settings.stt_url, "http://127.0.0.1:8178");
  assert.equal(settings.stt_model, "base.en");
  assert.equal(settings.tts_url, "http://localhost:8880");
  assert.equal(settings.tts_voice, "af_heart");
  assert.equal(settings.speak, "all");
  assert.deepEqual(settings.play_command, ["paplay"]);
});

Deno.test("a command's path with a slash is taken from the config folder; ~/ from HOME; a bare name stays for PATH", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'tts_command = ["bin/piper", "-f", "-"]',
    'stt_command = ["~/whisper/run", "x"]',
    'play_command = ["pw-play", "-"]',
    'record_command = ["/usr/bin/../bin/arecord"]',
  );
  const settings = await load(home);
  const configDir = resolvePaths(home.env).configDir;
  assert.deepEqual(settings.tts_command, [
    join(configDir, "bin/piper"),
    "-f",
    "-",
  ]);
  assert.deepEqual(settings.stt_command, [
    join(home.dir, "whisper/run"),
    "x",
  ]);
  assert.deepEqual(settings.play_command, ["pw-play", "-"]);
  assert.deepEqual(settings.record_command, ["/usr/bin/arecord"]);
});

Deno.test("a wrong value stops with the file, the line, the key and what it must be, as the daemon says it", async () => {
  const cases: [string, RegExp][] = [
    [
      'record_command = "arecord"',
      /key "record_command" must be a non-empty array of non-empty strings \(argv, no shell\), got a string of 7 characters$/,
    ],
    [
      "play_command = []",
      /key "play_command" must be a non-empty array of non-empty strings/,
    ],
    [
      'tts_command = [""]',
      /key "tts_command" must be an array of strings \(the program first\), or \[\] for none/,
    ],
    [
      'stt_url = "http://host:1/v1"',
      /key "stt_url" must be an http\(s\) base URL .*, or "" for none, got string "http:\/\/host:1\/v1"$/,
    ],
    ['tts_url = "ftp://host"', /key "tts_url" must be an http\(s\) base URL/],
    [
      'speak = "loud"',
      /key "speak" must be "own" or "all", got string "loud"$/,
    ],
    ["stt_model = 3", /key "stt_model" must be a string, got number 3$/],
  ];
  await using home = await VoiceHome.create();
  for (const [line, message] of cases) {
    await home.config("# voice", line);
    await assert.rejects(
      load(home),
      (error: Error) =>
        error instanceof TypeError &&
        error.message.startsWith(`${home.configFile}:2: `) &&
        message.test(error.message),
      line,
    );
  }
});

Deno.test("a config file the daemon would refuse is refused the same way", async () => {
  await using home = await VoiceHome.create();
  await home.config("llm_url = 5");
  await assert.rejects(
    load(home),
    (error: Error) =>
      error instanceof TypeError && error.message.includes('"llm_url"'),
  );
  await home.config("speak = ");
  await assert.rejects(load(home), SyntaxError);
});

Deno.test("only the commands and servers in use are granted", () => {
  const defaults = defaultSettings();
  // No transcription set: nothing listens, so nothing records.
  assert.deepEqual(commandsInUse(defaults).map((c) => c.key), [
    "tts_command",
    "play_command",
  ]);
  assert.deepEqual(urlsInUse(defaults), []);
  const served: VoiceSettings = {
    ...defaults,
    stt_url: "http://127.0.0.1:8178",
    tts_url: "http://127.0.0.1:8880",
  };
  assert.deepEqual(commandsInUse(served).map((c) => c.key), [
    "record_command",
    "play_command",
  ]);
  assert.deepEqual(urlsInUse(served).map((u) => u.key), ["stt_url", "tts_url"]);
  // tts_command = [] does without speech: neither it nor the player runs.
  const commands: VoiceSettings = {
    ...defaults,
    stt_command: ["whisper-cli"],
    tts_command: [],
  };
  assert.deepEqual(commandsInUse(commands).map((c) => c.key), [
    "record_command",
    "stt_command",
  ]);
  assert.deepEqual(urlsInUse(commands), []);
});
