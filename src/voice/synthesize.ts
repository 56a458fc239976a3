/**
 * Text to speech: `tts_url` (an OpenAI-compatible `/v1/audio/speech`) or
 * `tts_command` (text on stdin, a WAV on stdout), and playback through
 * `play_command` (a WAV on stdin). Each ends at once when its signal aborts.
 */
import { AssistantError } from "../base/errors.ts";
import { postAudio, readBody } from "./http.ts";
import { runCommand } from "./run_command.ts";
import { synthesisInUse, type VoiceSettings } from "./settings.ts";
import { completeWav, isWav } from "./wav.ts";

/** Turns one chunk of text into a WAV. */
export type Synthesizer = (
  text: string,
  signal: AbortSignal,
) => Promise<Uint8Array>;

/** Plays one WAV to its end. */
export type Player = (wav: Uint8Array, signal: AbortSignal) => Promise<void>;

/** How long a speech server may take for one chunk. */
const SPEECH_TIMEOUT_MS = 60_000;

const encoder = new TextEncoder();

/** Injected parts of {@link synthesizer}. */
export interface SynthesizerOptions {
  fetch?: typeof fetch;
}

function audio(key: string, bytes: Uint8Array): Uint8Array {
  if (bytes.length === 0) {
    throw new AssistantError(
      `${key}: no audio came back: check ${key} in config.toml`,
    );
  }
  // Written to a pipe, a WAV's sizes are placeholders: some players trust them.
  return isWav(bytes) ? completeWav(bytes) : bytes;
}

/** The settings' synthesiser, or null when neither `tts_url` nor `tts_command` is set. */
export function synthesizer(
  settings: VoiceSettings,
  options: SynthesizerOptions = {},
): Synthesizer | null {
  switch (synthesisInUse(settings)) {
    case "url":
      return async (text, signal) => {
        const where = {
          key: "tts_url",
          what: "speech",
          base: settings.tts_url,
          signal,
        };
        const response = await postAudio({
          ...where,
          path: "/v1/audio/speech",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: settings.tts_model,
            input: text,
            voice: settings.tts_voice,
            response_format: "wav",
          }),
          timeoutMs: SPEECH_TIMEOUT_MS,
          ...(options.fetch ? { fetch: options.fetch } : {}),
        });
        const bytes = await readBody(
          where,
          async () => new Uint8Array(await response.arrayBuffer()),
        );
        return audio("tts_url", bytes);
      };
    case "command": {
      const argv = settings.tts_command;
      return async (text, signal) =>
        audio(
          "tts_command",
          await runCommand("tts_command", argv, encoder.encode(text + "\n"), {
            signal,
          }),
        );
    }
    case null:
      return null;
  }
}

/** The settings' player: `play_command`. */
export function player(settings: VoiceSettings): Player {
  const argv = settings.play_command;
  return async (wav, signal) => {
    await runCommand("play_command", argv, wav, { signal, output: false });
  };
}
