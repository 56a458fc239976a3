/**
 * `main.ts voice`: the voice client as its own process. It checks that it
 * was given exactly its grants (`deno task voice` derives them), connects
 * to the daemon, listens and speaks, and waits for the daemon to come back
 * when it goes away. It runs until SIGINT or SIGTERM.
 */
import {
  clientSocketPath,
  connectOrExplain,
  reconnect,
} from "../clients/client.ts";
import {
  readCommandLine,
  USAGE_EXIT,
  UsageError,
} from "../base/command_line.ts";
import { type Env, readEnv, resolvePaths } from "../base/paths.ts";
import { holds } from "../base/grant_query.ts";
import { AssistantError } from "../base/errors.ts";
import { LineStream } from "../streams/line_stream.ts";
import { writeAllSync } from "../streams/write_all.ts";
import {
  missingVoiceGrants,
  VOICE_ENV_VARS,
  voiceGrantInput,
} from "./grants.ts";
import { loadVoiceSettings, type VoiceSettings } from "./settings.ts";
import { Speaker } from "./speaker.ts";
import { player, synthesizer } from "./synthesize.ts";
import { transcriber } from "./transcribe.ts";
import { VoiceClient } from "./voice_client.ts";

const USAGE = "usage: main.ts voice";
const START =
  "start it with deno task voice, which grants exactly what it needs";
/** Exit codes: as `chat`'s for a daemon that refuses (1) or is absent (2). */
const EXIT = { ok: 0, failed: 1, usage: USAGE_EXIT } as const;

/** Options of {@link runVoice}, for tests. */
export interface RunVoiceOptions {
  env?: Env;
  /** Ends the client instead of a signal. */
  signal?: AbortSignal;
  /** Lines for the terminal; default stdout. */
  say?: (line: string) => void;
  /** Lines about failures; default stderr. */
  warn?: (line: string) => void;
  /** Lines typed in the terminal, each toggling listening; default stdin when it is a terminal. */
  input?: ReadableStream<Uint8Array> | null;
  /** Milliseconds between attempts to reach a daemon that went away; default 1000. */
  retryMs?: number;
  fetch?: typeof fetch;
}

function stdoutLine(line: string): void {
  writeAllSync(Deno.stdout, line + "\n");
}

function stderrLine(line: string): void {
  writeAllSync(Deno.stderr, line + "\n");
}

/** The settings, once the grants to read them and everything they name are held; AssistantError naming what is missing. */
async function checkedSettings(env: Env): Promise<{
  settings: VoiceSettings;
  socketPath: string;
}> {
  const absent = VOICE_ENV_VARS.filter((name) => !holds("env", name));
  if (absent.length > 0) {
    throw new AssistantError(
      `The voice client needs --allow-env=${absent.join(",")}: ${START}`,
    );
  }
  const socketPath = clientSocketPath(env);
  const paths = resolvePaths(env);
  if (!holds("read", paths.configFile)) {
    throw new AssistantError(
      `The voice client needs --allow-read=${paths.configFile}: ${START}`,
    );
  }
  const settings = await loadVoiceSettings(paths, env);
  // Deno resolves a bare name through PATH for the check, as it does to run it.
  const missing = missingVoiceGrants(
    voiceGrantInput(
      settings,
      { socketPath, configFile: paths.configFile },
      (_key, command0) => command0,
    ),
  );
  if (missing.length > 0) {
    throw new AssistantError(
      `The voice client needs ${missing.join(" ")}: ${START}`,
    );
  }
  return { settings, socketPath };
}

/** Each line typed toggles listening. */
async function toggles(
  input: ReadableStream<Uint8Array>,
  voice: VoiceClient,
  signal: AbortSignal,
): Promise<void> {
  const lines = input.pipeThrough(new LineStream({ maxBytes: 4096 }), {
    signal,
  });
  try {
    for await (const _line of lines) voice.toggle();
  } catch {
    // Stopped, or the terminal went away: listening is still toggled elsewhere.
  }
}

/** Runs the voice client until SIGINT or SIGTERM; resolves to the exit code (2 when no daemon answers at start, as `chat`). */
export async function runVoice(
  args: string[],
  options: RunVoiceOptions = {},
): Promise<number> {
  const say = options.say ?? stdoutLine;
  const warn = options.warn ?? stderrLine;
  try {
    readCommandLine(args, { options: {}, usage: USAGE });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    warn(error.message);
    return EXIT.usage;
  }
  const env = options.env ?? readEnv;
  let settings: VoiceSettings;
  let socketPath: string;
  try {
    ({ settings, socketPath } = await checkedSettings(env));
  } catch (error) {
    const known = error instanceof AssistantError ||
      error instanceof SyntaxError || error instanceof TypeError;
    if (!known) throw error;
    warn(error.message);
    return EXIT.failed;
  }
  const services = options.fetch ? { fetch: options.fetch } : {};
  const synthesize = synthesizer(settings, services);
  const speaker = synthesize
    ? new Speaker({ synthesize, play: player(settings), report: warn })
    : null;
  const transcribe = transcriber(settings, services);
  const listens = transcribe !== null;
  if (speaker === null && !listens) {
    warn(
      "Nothing to do: set tts_command or tts_url to speak, stt_url or stt_command to listen (config.toml)",
    );
    return EXIT.failed;
  }

  const stop = new AbortController();
  const end = () => stop.abort();
  const signals = options.signal === undefined
    ? (["SIGINT", "SIGTERM"] as const)
    : [];
  for (const name of signals) Deno.addSignalListener(name, end);
  options.signal?.addEventListener("abort", end, { once: true });
  if (options.signal?.aborted) end();
  try {
    let client = await connectOrExplain(env, (line) => warn(line.trimEnd()));
    if (typeof client === "number") return client;
    await using voice = new VoiceClient({
      settings,
      speaker,
      transcribe,
      say,
      warn,
    });
    const input = options.input === undefined
      ? (Deno.stdin.isTerminal() ? Deno.stdin.readable : null)
      : options.input;
    const keys = input !== null && listens;
    say(
      `Voice client on ${socketPath}: ${
        speaker === null
          ? "not speaking (tts_command is [] and tts_url unset)"
          : settings.speak === "all"
          ? "speaking every reply"
          : "speaking the replies to its own questions"
      }; ${
        listens
          ? `listening while listening is on${
            keys ? " (Enter here toggles it)" : ""
          }`
          : "not listening (set stt_url or stt_command)"
      }. Ctrl-C ends it.`,
    );
    if (keys) toggles(input, voice, stop.signal);
    for (;;) {
      const current = client;
      if (stop.signal.aborted) {
        await current.close();
        break;
      }
      const close = () => current.close();
      stop.signal.addEventListener("abort", close, { once: true });
      try {
        await voice.serve(current);
      } finally {
        stop.signal.removeEventListener("abort", close);
        await current.close();
      }
      if (stop.signal.aborted) break;
      say(
        "The daemon went away: waiting for it to come back (Ctrl-C ends the voice client)",
      );
      const next = await reconnect(
        socketPath,
        stop.signal,
        options.retryMs ?? 1000,
      );
      if (next === null) break;
      client = next;
      say("The daemon is back");
    }
    return EXIT.ok;
  } finally {
    for (const name of signals) Deno.removeSignalListener(name, end);
    options.signal?.removeEventListener("abort", end);
  }
}
