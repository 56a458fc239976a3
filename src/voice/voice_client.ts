/**
 * The voice client's work on a connection: it records while the daemon
 * says `listening` is on, transcribes the recording and sends it as an
 * `ask` with a ref, and speaks replies as their tokens arrive. It outlives
 * any one connection: a question transcribed while the daemon is away is
 * sent once it is back.
 */
import type { DaemonClient } from "../clients/client.ts";
import { AssistantError } from "../base/errors.ts";
import type { Command, Event, Ref } from "../protocol/protocol.ts";
import { Recording } from "./recorder.ts";
import type { VoiceSettings } from "./settings.ts";
import type { Speaker } from "./speaker.ts";
import type { Transcriber } from "./transcribe.ts";
import { type SpeechControl, TurnFollower } from "./turns.ts";

/** Options of {@link VoiceClient}. */
export interface VoiceClientOptions {
  settings: VoiceSettings;
  /** Speaks replies; null when speaking is off (no synthesis or no player). */
  speaker: Speaker | null;
  /** Null when neither `stt_url` nor `stt_command` is set. */
  transcribe: Transcriber | null;
  /** Starts a recording; default `record_command`. */
  record?: () => Recording;
  /** One line of what the client is doing, for its terminal. */
  say: (line: string) => void;
  /** One line about something that failed. */
  warn: (line: string) => void;
}

const SILENT: SpeechControl = {
  begin() {},
  text() {},
  end() {},
  silence() {},
};

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Listens and speaks for the daemon's clients. */
export class VoiceClient implements AsyncDisposable {
  readonly #options: VoiceClientOptions;
  readonly #turns: TurnFollower;
  readonly #own = new Set<Ref>();
  readonly #abort = new AbortController();
  #client: DaemonClient | null = null;
  #listening = false;
  #recording: Recording | null = null;
  /** Questions transcribed while no daemon was connected. */
  #waiting: string[] = [];
  /** Transcriptions, one after another so questions go in the order spoken. */
  #asking: Promise<void> = Promise.resolve();

  /** Creates the client; it does nothing until {@link VoiceClient.serve}. */
  constructor(options: VoiceClientOptions) {
    this.#options = options;
    this.#turns = new TurnFollower(options.speaker ?? SILENT, {
      speak: options.settings.speak,
      own: (ref) => this.#own.has(ref),
    });
  }

  /** Serves one connection until the daemon closes it (or it is closed). */
  async serve(client: DaemonClient): Promise<void> {
    this.#client = client;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const text of waiting) await this.#ask(text);
    this.#handle(client.hello);
    this.#setListening(client.hello.listening === true);
    for (;;) {
      let event: Event | null;
      try {
        event = await client.next();
      } catch (error) {
        this.#options.warn(
          `The daemon sent something unreadable: ${message(error)}`,
        );
        event = null;
      }
      if (event === null) break;
      this.#handle(event);
    }
    this.#client = null;
    // The turn in flight will never end here; what is being said stops.
    this.#turns.silence();
    this.#setListening(false);
  }

  /** Asks the daemon to turn listening on or off (for a key in this client's terminal). */
  toggle(): void {
    this.#send({ type: "listen", on: !this.#listening });
  }

  #handle(event: Event): void {
    this.#turns.follow(event);
    switch (event.type) {
      case "listening":
        this.#setListening(event.on);
        break;
      case "error":
        if (event.ref !== undefined && this.#own.has(event.ref)) {
          this.#options.warn(
            event.turn === true
              ? `The reply failed: ${event.message}`
              : `The daemon refused: ${event.message}`,
          );
        }
        break;
    }
  }

  #setListening(on: boolean): void {
    this.#listening = on;
    if (on && this.#recording === null) this.#startRecording();
    if (!on && this.#recording !== null) this.#stopRecording();
  }

  #startRecording(): void {
    const { settings, transcribe, say, warn } = this.#options;
    if (transcribe === null) {
      warn(
        "Listening needs a transcription: set stt_url or stt_command in config.toml",
      );
      this.#send({ type: "listen", on: false });
      return;
    }
    let recording: Recording;
    try {
      recording = this.#options.record?.() ??
        Recording.start(settings.record_command);
    } catch (error) {
      if (!(error instanceof AssistantError)) throw error;
      warn(error.message);
      this.#send({ type: "listen", on: false });
      return;
    }
    this.#recording = recording;
    say("Listening…");
    recording.started.then(() => {
      if (this.#recording === recording) say("Recording");
    });
    recording.exited.then(() => {
      // It stopped by itself (no microphone, a size limit, a duration):
      // what it recorded is still asked, and every client sees listening end.
      if (this.#recording !== recording) return;
      this.#stopRecording();
      this.#send({ type: "listen", on: false });
    });
  }

  #stopRecording(): void {
    const recording = this.#recording!;
    this.#recording = null;
    const { say, warn } = this.#options;
    const transcribe = this.#options.transcribe!;
    const wav = recording.finish();
    wav.catch(() => {});
    this.#asking = this.#asking.then(async () => {
      let text: string;
      try {
        const audio = await wav;
        say("Transcribing…");
        text = await transcribe(audio, this.#abort.signal);
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        warn(`Nothing was asked: ${message(error)}`);
        return;
      }
      if (text === "") {
        say("Heard nothing: nothing was asked");
        return;
      }
      say(`You: ${text}`);
      await this.#ask(text);
    });
  }

  async #ask(text: string): Promise<void> {
    const client = this.#client;
    if (client === null) {
      this.#waiting.push(text);
      this.#options.say(
        "The daemon is away: the question goes once it is back",
      );
      return;
    }
    const ref = client.nextRef();
    this.#own.add(ref);
    try {
      await client.send({ type: "ask", text, ref });
    } catch {
      this.#waiting.push(text);
      this.#options.say(
        "The daemon is away: the question goes once it is back",
      );
    }
  }

  /** Sends a command with a ref of its own; a daemon that has gone takes nothing. */
  #send(command: Command): void {
    const client = this.#client;
    if (client === null) return;
    const ref = client.nextRef();
    this.#own.add(ref);
    client.send({ ...command, ref }).catch(() => {});
  }

  /** Ends recording, transcription and speech, and waits for their processes. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#abort.abort();
    const recording = this.#recording;
    this.#recording = null;
    await recording?.[Symbol.asyncDispose]();
    await this.#options.speaker?.[Symbol.asyncDispose]();
    await this.#asking;
  }
}
