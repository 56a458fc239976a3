/**
 * The voice client's settings: the top-level voice keys of the daemon's
 * `config.toml` (`record_command`, `stt_url`, …), as the config schema
 * declares, checks and defaults them (base/config_schema.ts). The daemon
 * never uses them; only this client and its flags do. What this module adds
 * is where each command's program is found, and which parts are in use.
 */
import { isAbsolute, join, resolve } from "node:path";
import { type Config, defaultConfig, loadConfig } from "../base/config.ts";
import { clean, type Env, type Paths, readEnv } from "../base/paths.ts";

/** The voice keys, in the README's order. */
export const VOICE_KEYS = Object.freeze(
  [
    "record_command",
    "stt_url",
    "stt_command",
    "stt_model",
    "tts_command",
    "tts_url",
    "tts_model",
    "tts_voice",
    "play_command",
    "speak",
  ] as const,
);

/** One voice key. */
export type VoiceKey = typeof VOICE_KEYS[number];

/** The voice client's keys, typed as the schema declares them. */
export type VoiceSettings = Pick<Config, VoiceKey>;

/** Which replies are spoken: those to this client's own questions, or every reply in the current conversation. */
export type SpeakMode = VoiceSettings["speak"];

/** The keys whose value is a command's argv. */
const COMMAND_KEYS = [
  "record_command",
  "stt_command",
  "tts_command",
  "play_command",
] as const satisfies readonly VoiceKey[];

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

/** The voice keys of a loaded config, each command's program found from the config folder (or HOME for `~/`). */
export function voiceSettings(
  config: Config,
  configDir: string,
  env: Env = readEnv,
): VoiceSettings {
  const settings = Object.fromEntries(
    VOICE_KEYS.map((key) => [key, structuredClone(config[key])]),
  ) as VoiceSettings;
  for (const key of COMMAND_KEYS) {
    const argv = settings[key];
    if (argv[0] !== undefined) argv[0] = commandPath(argv[0], configDir, env);
  }
  return settings;
}

/** The voice keys' built-in values, from their declarations. */
export function defaultVoiceSettings(paths: Paths): VoiceSettings {
  return voiceSettings(defaultConfig(paths), paths.configDir);
}

/**
 * Reads the config file as the daemon does (missing = defaults): every key
 * checked against its declaration, so an error names the file, line and key
 * the same way whichever part reads it.
 */
export async function loadVoiceSettings(
  paths: Paths,
  env: Env = readEnv,
): Promise<VoiceSettings> {
  const { config } = await loadConfig(paths, env);
  return voiceSettings(config, paths.configDir, env);
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

/** The commands the settings run, by key: the grants `--allow-run` needs. Recording needs a transcription, playing a synthesis. */
export function commandsInUse(
  settings: VoiceSettings,
): { key: VoiceKey; argv: string[] }[] {
  const used: { key: VoiceKey; argv: string[] }[] = [];
  const transcription = transcriptionInUse(settings);
  if (transcription !== null) {
    used.push({ key: "record_command", argv: settings.record_command });
    if (transcription === "command") {
      used.push({ key: "stt_command", argv: settings.stt_command });
    }
  }
  const synthesis = synthesisInUse(settings);
  if (synthesis !== null) {
    if (synthesis === "command") {
      used.push({ key: "tts_command", argv: settings.tts_command });
    }
    used.push({ key: "play_command", argv: settings.play_command });
  }
  return used;
}

/** The base URLs the settings reach, by key. */
export function urlsInUse(
  settings: VoiceSettings,
): { key: VoiceKey; url: string }[] {
  const used: { key: VoiceKey; url: string }[] = [];
  if (transcriptionInUse(settings) === "url") {
    used.push({ key: "stt_url", url: settings.stt_url });
  }
  if (synthesisInUse(settings) === "url") {
    used.push({ key: "tts_url", url: settings.tts_url });
  }
  return used;
}
