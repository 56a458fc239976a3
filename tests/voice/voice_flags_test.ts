/**
 * `main.ts voice-flags [--task]`, `deno task voice`, and the voice client
 * started with exactly the derived flags: the grants are the point, so these
 * run real subprocesses.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { MAIN_MODULE } from "../../src/launch/launch.ts";
import { inheritedEnv } from "../support/daemon_harness.ts";
import { argvOf, descendants } from "../support/process_tree.ts";
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

const ROOT = new URL("../../", import.meta.url).pathname;

/** The flags deno.json's voice task gives `voice-flags` itself. */
const LAUNCHER: string[] = (() => {
  const deno = JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json")));
  const line: string = deno.tasks.voice.command;
  const words = line.match(/^\$\(deno run (.*) main\.ts voice-flags --task\)$/);
  assert.ok(words, `the voice task is a launcher line: ${line}`);
  return words[1]!.split(" ");
})();

/** The words that follow the deno executable in the line `--task` prints. */
const RUN = [
  "run",
  `--lock=${ROOT}deno.lock`,
  "--frozen",
  "--quiet",
  "--no-prompt",
];

type Vars = Record<string, string>;

function envFor(home: VoiceHome): Vars {
  return { ...inheritedEnv(), ...home.vars() };
}

async function voiceFlags(env: Vars, ...args: string[]) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...LAUNCHER, MAIN_MODULE, "voice-flags", ...args],
    env,
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

/** Starts the command line `voice-flags --task` printed, as `deno task` runs it. */
function spawnLine(home: VoiceHome, line: string[]): Deno.ChildProcess {
  const [command, ...args] = line;
  return new Deno.Command(command!, {
    args,
    env: envFor(home),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("voice-flags grants the socket, the config file, the commands and servers in use, and nothing else; --task prints the whole command", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'stt_url = "http://127.0.0.1:8178"',
    'tts_url = "http://localhost:8880"',
    `record_command = ${JSON.stringify([RECORD_SH])}`,
    `play_command = ${JSON.stringify([PLAY_SH, home.playLog])}`,
    // Not in use while tts_url is set: not granted.
    `tts_command = ${JSON.stringify([TTS_SH])}`,
  );
  const flags = [
    `--allow-net=unix:${home.socket},127.0.0.1:8178,localhost:8880`,
    `--allow-read=${home.socket},${home.configFile}`,
    `--allow-write=${home.socket}`,
    `--allow-run=${RECORD_SH},${PLAY_SH}`,
    "--allow-env=HOME,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME",
  ];
  const plain = await voiceFlags(envFor(home));
  assert.equal(plain.code, 0, plain.stderr);
  assert.deepEqual(plain.words, flags);
  const task = await voiceFlags(envFor(home), "--task");
  assert.equal(task.code, 0, task.stderr);
  assert.deepEqual(task.words, [
    Deno.execPath(),
    ...RUN,
    ...flags,
    MAIN_MODULE,
    "voice",
  ]);
});

Deno.test("voice-flags names the key of a command that is not installed; --task then gives deno task only false to run", async () => {
  await using home = await VoiceHome.create();
  await home.config(
    'stt_url = "http://127.0.0.1:8178"',
    'record_command = ["no-such-recorder-da", "-q"]',
  );
  const message =
    /^record_command: no-such-recorder-da is not installed \(not found on PATH, or not executable\): install it, or change record_command in .*config\.toml\n$/;
  const task = await voiceFlags(envFor(home), "--task");
  assert.equal(task.code, 1);
  assert.deepEqual(task.words, ["false"]);
  assert.match(task.stderr, message);
  const plain = await voiceFlags(envFor(home));
  assert.equal(plain.code, 1);
  assert.deepEqual(plain.words, []);
  assert.match(plain.stderr, message);
});

Deno.test("voice-flags --task refuses a voice key the config schema refuses, naming the file, line and key", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', "play_command = []");
  const task = await voiceFlags(envFor(home), "--task");
  assert.equal(task.code, 1);
  assert.deepEqual(task.words, ["false"]);
  assert.equal(
    task.stderr,
    `${home.configFile}:2: key "play_command" must be a non-empty array of non-empty strings (argv, no shell), got an array\n`,
  );
});

/** Whether this user has a /run/user/<uid> the fallback would take. */
function runUserDirFit(): boolean {
  try {
    const info = Deno.lstatSync(`/run/user/${Deno.uid()}`);
    return info.isDirectory && info.uid === Deno.uid() &&
      ((info.mode ?? 0) & 0o777) === 0o700;
  } catch {
    return false;
  }
}

Deno.test("without XDG_RUNTIME_DIR, voice-flags --task hands /run/user/<uid> to the client, or says in one message why it cannot", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', ...home.speechLines());
  const env = envFor(home);
  delete env.XDG_RUNTIME_DIR;
  const task = await voiceFlags(env, "--task");
  if (runUserDirFit()) {
    const dir = `/run/user/${Deno.uid()}`;
    assert.equal(task.code, 0, task.stderr);
    assert.deepEqual(task.words.slice(0, 3), [
      "env",
      `XDG_RUNTIME_DIR=${dir}`,
      Deno.execPath(),
    ]);
    assert.ok(
      task.words.includes(`--allow-write=${dir}/desktop-assistant.sock`),
      task.words.join(" "),
    );
  } else {
    assert.equal(task.code, 1);
    assert.deepEqual(task.words, ["false"]);
    assert.match(
      task.stderr,
      /^XDG_RUNTIME_DIR is not set, and \/run\/user\/\d+ (does not exist|is not a directory|belongs to|has mode)[^\n]*: set XDG_RUNTIME_DIR to [^\n]*\n$/,
    );
  }
});

Deno.test("deno task voice runs the voice client with exactly its derived flags and nothing else beside it: it speaks a reply and ends on SIGINT", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', ...home.speechLines());
  const { code, words, stderr } = await voiceFlags(envFor(home), "--task");
  assert.equal(code, 0, stderr);
  await using daemon = ScriptedDaemon.start(home.socket);
  const task = new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "voice"],
    cwd: ROOT,
    env: envFor(home),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = task.output();
  await daemon.connected();
  // `deno task` and the client: the launcher has exited.
  const below = descendants(task.pid);
  assert.equal(below.length, 1, below.map((pid) => argvOf(pid)).join("\n"));
  assert.deepEqual(argvOf(below[0]!).slice(1), words.slice(1));
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
  task.kill("SIGINT");
  const result = await within(output, "the voice client to end");
  assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
});

Deno.test("the voice client started without one of its grants names it", async () => {
  await using home = await VoiceHome.create();
  await home.config('speak = "all"', ...home.speechLines());
  const { words } = await voiceFlags(envFor(home), "--task");
  const run = words.find((word) => word.startsWith("--allow-run="))!;
  const reduced = words.filter((word) => word !== run);
  reduced.splice(reduced.indexOf(MAIN_MODULE), 0, `--allow-run=${TTS_SH}`);
  const result = await within(
    spawnLine(home, reduced).output(),
    "the voice client to refuse",
  );
  assert.equal(result.code, 1);
  assert.equal(
    new TextDecoder().decode(result.stderr).trim(),
    `The voice client needs --allow-run=${PLAY_SH}: start it with deno task voice, which grants exactly what it needs`,
  );
});
