/**
 * `main.ts voice-flags --task` and the voice client started with exactly
 * those flags, as `deno task voice` starts it: the grants are the point, so
 * these run real subprocesses.
 */
import assert from "node:assert/strict";
import { MAIN_MODULE } from "../../src/launch/launch.ts";
import { inheritedEnv } from "../support/daemon_harness.ts";
import {
  PLAY_SH,
  playedTexts,
  RECORD_SH,
  ScriptedDaemon,
  TTS_SH,
  VoiceHome,
  waitForFile,
  within,
} from "./harness.ts";

/** The flags deno.json's voice task gives `voice-flags` itself. */
const FLAGS_GRANTS = [
  "--allow-read",
  "--allow-env=HOME,PATH,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME",
];

async function voiceFlags(home: VoiceHome) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      ...FLAGS_GRANTS,
      MAIN_MODULE,
      "voice-flags",
      "--task",
    ],
    env: { ...inheritedEnv(), ...home.vars() },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code,
    words: new TextDecoder().decode(stdout).split("\n").filter((w) => w),
    stderr: new TextDecoder().decode(stderr),
  };
}

Deno.test("voice-flags --task grants the socket, the config file, the commands and servers in use, and nothing else", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'stt_url = "http://127.0.0.1:8178"',
    'tts_url = "http://localhost:8880"',
    `record_command = ${JSON.stringify([RECORD_SH])}`,
    `play_command = ${JSON.stringify([PLAY_SH, home.playLog])}`,
    // Not in use while tts_url is set: not granted.
    `tts_command = ${JSON.stringify([TTS_SH])}`,
  );
  const { code, words, stderr } = await voiceFlags(home);
  assert.equal(code, 0, stderr);
  assert.deepEqual(words, [
    `--allow-net=unix:${home.socket},127.0.0.1:8178,localhost:8880`,
    `--allow-read=${home.socket},${home.configFile}`,
    `--allow-write=${home.socket}`,
    `--allow-run=${RECORD_SH},${PLAY_SH}`,
    "--allow-env=HOME,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME",
    MAIN_MODULE,
    "voice",
  ]);
});

Deno.test("voice-flags names the key of a command that is not installed", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'stt_url = "http://127.0.0.1:8178"',
    'record_command = ["no-such-recorder-da", "-q"]',
  );
  const { code, words, stderr } = await voiceFlags(home);
  assert.equal(code, 1);
  assert.deepEqual(words, []);
  assert.match(
    stderr,
    /^record_command: no-such-recorder-da is not installed .*change record_command in .*config\.toml/,
  );
});

function spawnVoice(home: VoiceHome, flags: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--no-prompt", ...flags],
    env: { ...inheritedEnv(), ...home.vars() },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("the voice client runs with exactly its derived flags: it speaks a reply and ends on SIGINT", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'speak = "all"',
    `tts_command = ${JSON.stringify([TTS_SH, home.ttsLog])}`,
    `play_command = ${JSON.stringify([PLAY_SH, home.playLog, "0"])}`,
  );
  const { code, words, stderr } = await voiceFlags(home);
  assert.equal(code, 0, stderr);
  await using daemon = ScriptedDaemon.start(home.socket);
  const child = spawnVoice(home, words);
  const output = child.output();
  await daemon.connected();
  await daemon.send(
    { type: "user", text: "Hi" },
    { type: "token", delta: "Spoken with scoped grants." },
    { type: "done", id: 1, stopped: false },
  );
  await waitForFile(
    home.playLog,
    (text) => text.includes("end ") ? true : undefined,
    "the reply to be played",
  );
  assert.deepEqual(await playedTexts(home.playLog), [
    "Spoken with scoped grants.",
  ]);
  child.kill("SIGINT");
  const result = await within(output, "the voice client to end");
  assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
});

Deno.test("the voice client started without one of its grants names it", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'speak = "all"',
    `tts_command = ${JSON.stringify([TTS_SH, home.ttsLog])}`,
    `play_command = ${JSON.stringify([PLAY_SH, home.playLog, "0"])}`,
  );
  const { words } = await voiceFlags(home);
  const run = words.find((word) => word.startsWith("--allow-run="))!;
  const reduced = words.filter((word) => word !== run);
  reduced.splice(reduced.indexOf(MAIN_MODULE), 0, `--allow-run=${TTS_SH}`);
  const result = await within(
    spawnVoice(home, reduced).output(),
    "the voice client to refuse",
  );
  assert.equal(result.code, 1);
  assert.equal(
    new TextDecoder().decode(result.stderr).trim(),
    `The voice client needs --allow-run=${PLAY_SH}: start it with deno task voice, which grants exactly what it needs`,
  );
});
