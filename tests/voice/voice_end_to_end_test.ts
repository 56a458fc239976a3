/**
 * The whole spoken turn with the real pieces: the assistant and its socket
 * server (in this process) on the fake llama-server, the voice client as its
 * own process with the flags `voice-flags --task` derives, the fixture
 * recorder and player over files, a fake transcription server and espeak-ng.
 * Another client switches listening, as a hotkey or `/talk` would.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { daemonEnv, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm, gated, hold, reply } from "../support/fake_llm.ts";
import type { SocketClient } from "../support/socket_client.ts";
import { MAIN_MODULE } from "../../src/launch/launch.ts";
import {
  espeakMissing,
  FakeTranscriber,
  Lines,
  PLAY_SH,
  type PlayEntry,
  playLog,
  RECORD_SH,
  waitForFile,
  within,
} from "./harness.ts";

const missing = espeakMissing();

/** The voice client started from the line `voice-flags --task` prints, its output kept line by line. */
class VoiceProcess implements AsyncDisposable {
  readonly said = new Lines();
  readonly warned = new Lines();
  readonly #child: Deno.ChildProcess;
  readonly #reading: Promise<unknown>;

  private constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.#reading = Promise.all([
      VoiceProcess.#lines(child.stdout, this.said),
      VoiceProcess.#lines(child.stderr, this.warned),
    ]);
  }

  static async #lines(stream: ReadableStream<Uint8Array>, into: Lines) {
    let rest = "";
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      const parts = (rest + text).split("\n");
      rest = parts.pop()!;
      for (const line of parts) into.push(line);
    }
    if (rest !== "") into.push(rest);
  }

  /** Derives the flags for `env` and starts the client with exactly those. */
  static async start(env: Record<string, string>): Promise<VoiceProcess> {
    const flags = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        "--allow-read",
        "--allow-sys=uid",
        "--allow-env",
        MAIN_MODULE,
        "voice-flags",
        "--task",
      ],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const line = new TextDecoder().decode(flags.stdout).split("\n")
      .filter((word) => word !== "");
    assert.equal(flags.code, 0, new TextDecoder().decode(flags.stderr));
    const [command, ...args] = line;
    return new VoiceProcess(
      new Deno.Command(command!, {
        args,
        env,
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn(),
    );
  }

  /** Ends it as Ctrl-C does; resolves to its exit code. */
  async stop(): Promise<number> {
    try {
      this.#child.kill("SIGINT");
    } catch {
      // It has exited already.
    }
    const status = await within(this.#child.status, "the voice client to end");
    await this.#reading;
    return status.code;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** The play log's entries once `ready` says they are complete. */
function played(
  log: string,
  ready: (entries: PlayEntry[]) => boolean,
  what: string,
): Promise<PlayEntry[]> {
  return waitForFile(log, (text) => {
    const entries = playLog(text);
    return ready(entries) ? entries : undefined;
  }, what);
}

const starts = (entries: PlayEntry[]) =>
  entries.filter((entry) => entry.what === "start");

/** One listening round from another client: on, the recorder's first samples, off. */
async function talk(
  control: SocketClient,
  voice: VoiceProcess,
  round: number,
): Promise<void> {
  await control.send({ type: "listen", on: true, ref: `on-${round}` });
  await control.until((e) => e.type === "listening" && e.ref === `on-${round}`);
  await voice.said.has("Recording", round);
  await control.send({ type: "listen", on: false, ref: `off-${round}` });
}

Deno.test({
  name:
    `a spoken turn end to end: listening from another client records, its question is asked with a ref, the reply is spoken before its done, and a stop silences it${
      missing === null ? "" : ` (skipped: ${missing})`
    }`,
  ignore: missing !== null,
  async fn() {
    await using llm = await FakeLlm.start();
    await using stt = new FakeTranscriber([
      "Turn on the lights.",
      "Tell me a long story.",
      "And now?",
    ]);
    const logs = await Deno.makeTempDir({ prefix: "da-voice-e2e-" });
    const log = join(logs, "play.log");
    try {
      await using daemon = await LocalDaemon.start({
        llmUrl: llm.url,
        config: [
          `stt_url = "${stt.url}"`,
          `record_command = ${JSON.stringify([RECORD_SH])}`,
          // Each chunk "plays" for 30 s unless it is ended: what ends it shows.
          `play_command = ${JSON.stringify([PLAY_SH, log, "30"])}`,
        ].join("\n") + "\n",
      });
      await using control = await daemon.connect();
      await control.next("hello");
      await using voice = await VoiceProcess.start({
        ...inheritedEnv(),
        ...daemonEnv(daemon.home),
      });
      await voice.said.has("Voice client on");

      // 1. What was heard is asked with the voice client's own ref, and the
      // reply's first sentence plays while the rest has not even arrived.
      const firstPlayed = Promise.withResolvers<void>();
      llm.enqueue(
        gated(
          "The lights are on now. ",
          firstPlayed.promise,
          "They were off before.",
        ),
      );
      await talk(control, voice, 1);
      const asked = (await control.until((e) => e.type === "user")).at(-1)!;
      assert.equal(asked.text, "Turn on the lights.");
      const ref = asked.ref;
      assert.ok(typeof ref === "string" && ref !== "", "the ask carries a ref");
      assert.equal(stt.uploads.length, 1);
      const first = starts(
        await played(
          log,
          (entries) => starts(entries).length >= 1,
          "the reply's first chunk to play",
        ),
      )[0]!;
      firstPlayed.resolve();
      const done = (await control.until((e) => e.type === "done")).at(-1);
      const doneAt = BigInt(Date.now()) * 1_000_000n;
      assert.deepEqual(done, { type: "done", id: 1, stopped: false, ref });
      assert.ok(first.nanos < doneAt, "played before the reply's done");
      const wav = await Deno.readFile(first.file!);
      assert.ok(wav.length > 10_000, "espeak-ng's real samples");

      // 2. A long reply in flight: listening on silences what was still
      // playing; the new reply's first chunk plays; a stop from another
      // client ends the reply and its player, and nothing of it plays after.
      llm.enqueue(
        hold([
          "Once upon a time there was a lamp. ",
          "It had a second sentence ready. ",
          "And",
        ]),
      );
      await talk(control, voice, 2);
      await played(
        log,
        (entries) =>
          entries.some((e) => e.what === "killed" && e.pid === first.pid),
        "listening on to silence the first reply",
      );
      const second = await control.until((e) =>
        e.type === "user" && e.text === "Tell me a long story."
      );
      const secondRef = second.at(-1)!.ref;
      const playing = starts(
        await played(
          log,
          (entries) => starts(entries).length >= 2,
          "the long reply's first chunk to play",
        ),
      )[1]!;
      await control.send({ type: "stop" });
      assert.deepEqual(
        (await control.until((e) => e.type === "done")).at(-1),
        { type: "done", id: 1, stopped: true, ref: secondRef },
      );
      await played(
        log,
        (entries) =>
          entries.some((e) => e.what === "killed" && e.pid === playing.pid),
        "the stop to end the player",
      );

      // 3. The next reply plays next: nothing of the stopped one came between.
      llm.enqueue(reply({ content: ["Now it is quiet."] }));
      await talk(control, voice, 3);
      await control.until((e) => e.type === "done" && !e.stopped);
      const all = await played(
        log,
        (entries) => starts(entries).length >= 3,
        "the third reply to play",
      );
      const afterStop = all.slice(
        all.findIndex((e) => e.what === "killed" && e.pid === playing.pid) + 1,
      );
      assert.deepEqual(
        afterStop.map((e) => e.what),
        ["start"],
        "only the third reply's chunk after the stop",
      );
      assert.deepEqual(
        llm.chats.map((chat) => chat.abortedAt === null),
        [true, false, true],
        "the stopped reply's request was aborted",
      );
      assert.equal(await voice.stop(), 0);
      assert.deepEqual(voice.warned.all, []);
    } finally {
      await Deno.remove(logs, { recursive: true });
    }
  },
});
