/**
 * Speech to text: `stt_url` (an OpenAI-compatible
 * `/v1/audio/transcriptions`: multipart `file` and `model`, JSON `{text}`
 * back) or `stt_command` (a WAV on stdin, the text on stdout).
 */
import { AssistantError } from "../base/errors.ts";
import { postAudio, readBody } from "./http.ts";
import { runCommand } from "./run_command.ts";
import { transcriptionInUse, type VoiceSettings } from "./settings.ts";

/** Turns one recording into its text (trimmed; "" when nothing was said). */
export type Transcriber = (
  wav: Uint8Array,
  signal: AbortSignal,
) => Promise<string>;

/** How long a transcription may take. */
const TRANSCRIPTION_TIMEOUT_MS = 120_000;

/** Injected parts of {@link transcriber}. */
export interface TranscriberOptions {
  fetch?: typeof fetch;
}

/** The settings' transcriber, or null when neither `stt_url` nor `stt_command` is set. */
export function transcriber(
  settings: VoiceSettings,
  options: TranscriberOptions = {},
): Transcriber | null {
  switch (transcriptionInUse(settings)) {
    case "url":
      return async (wav, signal) => {
        const where = {
          key: "stt_url",
          what: "transcription",
          base: settings.stt_url,
          signal,
        };
        const form = new FormData();
        form.append(
          "file",
          new File([wav as Uint8Array<ArrayBuffer>], "speech.wav", {
            type: "audio/wav",
          }),
        );
        form.append("model", settings.stt_model);
        const response = await postAudio({
          ...where,
          path: "/v1/audio/transcriptions",
          body: form,
          timeoutMs: TRANSCRIPTION_TIMEOUT_MS,
          ...(options.fetch ? { fetch: options.fetch } : {}),
        });
        const body = await readBody(where, () => response.json());
        const text = (body as { text?: unknown } | null)?.text;
        if (typeof text !== "string") {
          throw new AssistantError(
            `stt_url: the transcription server at ${settings.stt_url} answered without a "text" string: check that it speaks the OpenAI transcription API`,
          );
        }
        return text.trim();
      };
    case "command": {
      const argv = settings.stt_command;
      return async (wav, signal) => {
        const out = await runCommand("stt_command", argv, wav, { signal });
        return new TextDecoder().decode(out).trim();
      };
    }
    case null:
      return null;
  }
}
