/**
 * The voice client's settings: top-level keys of the daemon's `config.toml`
 * (`record_command`, `stt_url`, …), with their defaults and checks. The
 * daemon never reads them; only this client and its flags do.
 */
import { isAbsolute, join, resolve } from "node:path";
import { parse } from "smol-toml";
import { parseConfig } from "../base/config.ts";
import { clean, type Env, type Paths, readEnv } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";

/** Which replies are spoken: those to this client's own questions, or every reply in the current conversation. */
export type SpeakMode = "own" | "all";

/** The voice client's keys, after defaults and the user's file are merged. */
export interface VoiceSettings {
  /** argv that writes a WAV to stdout until it is ended; [] turns listening off. */
  record_command: string[];
  /** Base URL of an OpenAI-compatible transcription server; "" = unset. */
  stt_url: string;
  /** argv that reads a WAV on stdin and writes its text to stdout; [] = unset. */
  stt_command: string[];
  /** The `model` field sent to `stt_url`. */
  stt_model: string;
  /** argv that reads text on stdin and writes a WAV to stdout; [] = unset. */
  tts_command: string[];
  /** Base URL of an OpenAI-compatible speech server, used instead of `tts_command`; "" = unset. */
  tts_url: string;
  /** The `model` field sent to `tts_url`. */
  tts_model: string;
  /** The `voice` field sent to `tts_url`. */
  tts_voice: string;
  /** argv that plays a WAV from stdin; [] turns speaking off. */
  play_command: string[];
  /** Which replies are spoken. */
  speak: SpeakMode;
}

/** The built-in voice settings. */
export const DEFAULT_VOICE_SETTINGS: Readonly<VoiceSettings> = Object.freeze({
  record_command: [
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
  ],
  stt_url: "",
  stt_command: [],
  stt_model: "whisper-1",
  tts_command: ["espeak-ng", "--stdout"],
  tts_url: "",
  tts_model: "tts-1",
  tts_voice: "alloy",
  play_command: ["aplay", "-q"],
  speak: "own",
});

/** The keys of {@link VoiceSettings}, in the README's order. */
export const VOICE_KEYS: readonly (keyof VoiceSettings)[] = Object.freeze(
  Object.keys(DEFAULT_VOICE_SETTINGS) as (keyof VoiceSettings)[],
);

type Table = Record<string, unknown>;

const COMMAND_KEYS = new Set<keyof VoiceSettings>([
  "record_command",
  "stt_command",
  "tts_command",
  "play_command",
]);
const URL_KEYS = new Set<keyof VoiceSettings>(["stt_url", "tts_url"]);

function shown(value: unknown): string {
  if (typeof value === "string") return `string ${JSON.stringify(value)}`;
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "a table";
  return `${typeof value} ${String(value)}`;
}

/** `scheme://host[:port]` of an http(s) base URL, or undefined. */
function baseUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const plain = (url.protocol === "http:" || url.protocol === "https:") &&
    url.pathname === "/" && url.search === "" && url.hash === "" &&
    url.username === "" && url.password === "";
  return plain ? `${url.protocol}//${url.host}` : undefined;
}

/** A command's first word: a bare name stays for PATH; `~/` and a relative path with a slash are made absolute. */
function commandPath(word: string, configDir: string, env: Env): string {
  if (word === "~" || word.startsWith("~/")) {
    const home = env("HOME");
    if (home === undefined || !isAbsolute(home)) return word;
    return clean(join(home, word.slice(1)));
  }
  if (!word.includes("/")) return word;
  return isAbsolute(word) ? clean(word) : resolve(configDir, word);
}

/**
 * The voice keys of a parsed config table, checked, over the defaults. The
 * one place that reads them: it becomes the config schema's typed fields
 * once the schema declares these keys.
 */
export function voiceSettingsFrom(
  raw: Table,
  file: string,
  configDir: string,
  env: Env = readEnv,
): VoiceSettings {
  const settings: VoiceSettings = structuredClone(DEFAULT_VOICE_SETTINGS);
  const fail = (key: string, expected: string, value: unknown): never => {
    throw new TypeError(
      `${file}: key "${key}" must be ${expected}, got ${shown(value)}`,
    );
  };
  for (const key of VOICE_KEYS) {
    if (!Object.hasOwn(raw, key)) continue;
    const value = raw[key];
    if (COMMAND_KEYS.has(key)) {
      const ok = Array.isArray(value) &&
        value.every((word) => typeof word === "string") &&
        (value.length === 0 || value[0] !== "");
      if (!ok) {
        fail(key, "an array of strings (a command and its arguments)", value);
      }
      const argv = [...(value as string[])];
      if (argv.length > 0) argv[0] = commandPath(argv[0]!, configDir, env);
      (settings[key] as string[]) = argv;
    } else if (URL_KEYS.has(key)) {
      if (typeof value !== "string") fail(key, "a base URL string", value);
      const url = value === "" ? "" : baseUrl(value as string);
      if (url === undefined) {
        fail(
          key,
          'an http(s) base URL such as http://127.0.0.1:8178 (no path, query or credentials), or ""',
          value,
        );
      }
      (settings[key] as string) = url!;
    } else if (key === "speak") {
      if (value !== "own" && value !== "all") {
        fail(key, '"own" or "all"', value);
      }
      settings.speak = value as SpeakMode;
    } else {
      if (typeof value !== "string" || value === "") {
        fail(key, "a non-empty string", value);
      }
      (settings[key] as string) = value as string;
    }
  }
  return settings;
}

/** Reads the config file (missing = defaults): the daemon's keys checked as the daemon checks them, then the voice keys. */
export async function loadVoiceSettings(
  paths: Paths,
  env: Env = readEnv,
): Promise<VoiceSettings> {
  const file = paths.configFile;
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return structuredClone(DEFAULT_VOICE_SETTINGS);
    }
    if (error instanceof Deno.errors.NotCapable) throw error;
    throw new AssistantError(
      `Cannot read the config file ${file}: make it a readable file or remove it`,
      { cause: error },
    );
  }
  // The same errors (file, line, key) as the daemon gives for its keys.
  parseConfig(text, file, paths, env);
  return voiceSettingsFrom(parse(text), file, paths.configDir, env);
}

/** How speech is turned into text, when anything is set: `stt_url` wins over `stt_command`. */
export function transcriptionInUse(
  settings: VoiceSettings,
): "url" | "command" | null {
  if (settings.stt_url !== "") return "url";
  return settings.stt_command.length > 0 ? "command" : null;
}

/** How text is turned into speech, when anything is set: `tts_url` wins over `tts_command`. */
export function synthesisInUse(
  settings: VoiceSettings,
): "url" | "command" | null {
  if (settings.tts_url !== "") return "url";
  return settings.tts_command.length > 0 ? "command" : null;
}

/** The commands the settings run, by key: the grants `--allow-run` needs. */
export function commandsInUse(
  settings: VoiceSettings,
): { key: keyof VoiceSettings; argv: string[] }[] {
  const used: { key: keyof VoiceSettings; argv: string[] }[] = [];
  const listens = settings.record_command.length > 0 &&
    transcriptionInUse(settings) !== null;
  if (listens) {
    used.push({ key: "record_command", argv: settings.record_command });
    if (transcriptionInUse(settings) === "command") {
      used.push({ key: "stt_command", argv: settings.stt_command });
    }
  }
  const speaks = settings.play_command.length > 0 &&
    synthesisInUse(settings) !== null;
  if (speaks) {
    if (synthesisInUse(settings) === "command") {
      used.push({ key: "tts_command", argv: settings.tts_command });
    }
    used.push({ key: "play_command", argv: settings.play_command });
  }
  return used;
}

/** The base URLs the settings reach, by key. */
export function urlsInUse(
  settings: VoiceSettings,
): { key: keyof VoiceSettings; url: string }[] {
  const used: { key: keyof VoiceSettings; url: string }[] = [];
  const listens = settings.record_command.length > 0;
  if (listens && transcriptionInUse(settings) === "url") {
    used.push({ key: "stt_url", url: settings.stt_url });
  }
  if (settings.play_command.length > 0 && synthesisInUse(settings) === "url") {
    used.push({ key: "tts_url", url: settings.tts_url });
  }
  return used;
}
