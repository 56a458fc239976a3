/**
 * What the voice tests share: the fixture scripts and their logs, a
 * temporary home with its config file, and `main.ts voice` run in this
 * process; the scripted daemon and the waiting helpers are re-exported.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { resolvePaths } from "../../src/base/paths.ts";
import {
  defaultVoiceSettings,
  type VoiceSettings,
} from "../../src/voice/settings.ts";
import { runVoice, type RunVoiceOptions } from "../../src/voice/voice.ts";
import { envOf } from "../support/env_fixture.ts";
import type { ScriptedDaemon } from "./scripted_daemon.ts";
import { Lines, within } from "./wait.ts";

export { Lines, waitForFile, within } from "./wait.ts";
export {
  FakeTranscriber,
  hello,
  ScriptedDaemon,
  type Upload,
} from "./scripted_daemon.ts";

/** The fixture scripts (record, synthesise, play). */
export const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));
/** Writes a WAV until ended. */
export const RECORD_SH = join(FIXTURES, "record.sh");
/** Fails as arecord does without a microphone. */
export const NO_MICROPHONE_SH = join(FIXTURES, "no_microphone.sh");
/** A WAV that holds its text; `tts.sh LOG`. */
export const TTS_SH = join(FIXTURES, "tts.sh");
/** Saves what it is given and notes when; `play.sh LOG HOLD`. */
export const PLAY_SH = join(FIXTURES, "play.sh");

/** The voice keys' defaults as the config schema declares them. */
export function defaultSettings(): VoiceSettings {
  return defaultVoiceSettings(
    resolvePaths(envOf({ HOME: "/home/u", XDG_RUNTIME_DIR: "/run/user/1000" })),
  );
}

/** Why tests that synthesise for real cannot run here, or null. */
export function espeakMissing(): string | null {
  for (const dir of ["/usr/bin", "/usr/local/bin", "/bin"]) {
    try {
      if (Deno.statSync(join(dir, "espeak-ng")).isFile) return null;
    } catch {
      // Not there.
    }
  }
  return "espeak-ng is not installed (apt-get install espeak-ng; .ci/run does)";
}

/** One line of the play log: `start PID NANOS FILE`, `end PID NANOS` or `killed PID NANOS`. */
export interface PlayEntry {
  what: "start" | "end" | "killed";
  pid: number;
  nanos: bigint;
  file?: string;
}

/** Parses play.sh's log. */
export function playLog(text: string): PlayEntry[] {
  return text.split("\n").filter((line) => line !== "").map((line) => {
    const [what, pid, nanos, file] = line.split(" ");
    return {
      what: what as PlayEntry["what"],
      pid: Number(pid),
      nanos: BigInt(nanos!),
      ...(file ? { file } : {}),
    };
  });
}

/** The text a tts.sh WAV holds. */
export function spokenText(wav: Uint8Array): string {
  return new TextDecoder().decode(wav.subarray(44));
}

/** What play.sh was given, in order: the texts of the WAVs it saved. */
export async function playedTexts(log: string): Promise<string[]> {
  let text = "";
  try {
    text = await Deno.readTextFile(log);
  } catch {
    return [];
  }
  const texts: string[] = [];
  for (const entry of playLog(text)) {
    if (entry.what === "start") {
      texts.push(spokenText(await Deno.readFile(entry.file!)));
    }
  }
  return texts;
}

/** A temporary home for one test: runtime dir (the socket), config dir, and a log dir for the scripts. */
export class VoiceHome implements AsyncDisposable {
  readonly dir: string;
  readonly socket: string;
  readonly configFile: string;
  /** play.sh's log. */
  readonly playLog: string;
  /** tts.sh's log. */
  readonly ttsLog: string;

  private constructor(dir: string) {
    this.dir = dir;
    this.socket = join(dir, "run", "desktop-assistant.sock");
    this.configFile = join(dir, "config", "desktop-assistant", "config.toml");
    this.playLog = join(dir, "logs", "play.log");
    this.ttsLog = join(dir, "logs", "tts.log");
  }

  /** Creates the folders. */
  static async create(): Promise<VoiceHome> {
    const home = new VoiceHome(await Deno.makeTempDir({ prefix: "da-voice-" }));
    await Deno.mkdir(join(home.dir, "run"), { mode: 0o700 });
    await Deno.mkdir(dirname(home.configFile), { recursive: true });
    await Deno.mkdir(join(home.dir, "logs"));
    return home;
  }

  /** The environment that puts every path here. */
  env = (name: string): string | undefined =>
    ({
      HOME: this.dir,
      XDG_RUNTIME_DIR: join(this.dir, "run"),
      XDG_CONFIG_HOME: join(this.dir, "config"),
      XDG_DATA_HOME: join(this.dir, "data"),
      XDG_STATE_HOME: join(this.dir, "state"),
    })[name];

  /** The environment as variables, for a subprocess. */
  vars(): Record<string, string> {
    const names = [
      "HOME",
      "XDG_RUNTIME_DIR",
      "XDG_CONFIG_HOME",
      "XDG_DATA_HOME",
      "XDG_STATE_HOME",
    ];
    return Object.fromEntries(names.map((name) => [name, this.env(name)!]));
  }

  /** Writes config.toml from TOML lines. */
  async config(...lines: string[]): Promise<void> {
    await Deno.writeTextFile(this.configFile, lines.join("\n") + "\n");
  }

  /** Config lines for the fixture synthesiser and a player holding each chunk `hold` seconds. */
  speechLines(hold = 0): string[] {
    return [
      `tts_command = ${JSON.stringify([TTS_SH, this.ttsLog])}`,
      `play_command = ${JSON.stringify([PLAY_SH, this.playLog, String(hold)])}`,
    ];
  }

  /** Removes everything. */
  async [Symbol.asyncDispose](): Promise<void> {
    await Deno.remove(this.dir, { recursive: true });
  }
}

/** `main.ts voice` run in this process against a home's config and socket; `await using` ends it. */
export class VoiceRun implements AsyncDisposable {
  /** What it printed for its terminal. */
  readonly said = new Lines();
  /** What it printed about failures. */
  readonly warned = new Lines();
  /** Its exit code, once it has ended. */
  readonly exit: Promise<number>;
  readonly #stop = new AbortController();

  /** Starts it; `input` lines toggle listening. */
  constructor(home: VoiceHome, options: Partial<RunVoiceOptions> = {}) {
    this.exit = runVoice([], {
      env: home.env,
      signal: this.#stop.signal,
      say: this.said.push,
      warn: this.warned.push,
      input: null,
      retryMs: 20,
      ...options,
    });
  }

  /** Resolves once it is connected to `daemon`; fails at once, with what it printed, when it ends first. */
  async connected(daemon: ScriptedDaemon): Promise<void> {
    const ended = this.exit.then((code) => {
      throw new Error(
        `The voice client ended with ${code} before connecting:\n${
          this.warned.all.join("\n")
        }`,
      );
    });
    await Promise.race([daemon.connected(), ended]);
  }

  /** Ends it as SIGINT would; resolves to its exit code. */
  async stop(): Promise<number> {
    this.#stop.abort();
    return await within(this.exit, "the voice client to end");
  }

  /** Same as {@link VoiceRun.stop}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
