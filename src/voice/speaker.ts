/**
 * Speaking replies as they stream: a reply's text goes through the spoken
 * Markdown and the chunker, chunk n+1 is synthesised while chunk n plays,
 * and order is kept. Each reply is one utterance with its own AbortSignal:
 * silencing it ends its player and synthesiser processes at once and drops
 * its queued chunks, and every step checks that signal, so audio made for
 * an older reply is never played.
 */
import { type ChunkerOptions, SpeechChunker } from "./chunker.ts";
import { SpeechText } from "./speech_text.ts";
import type { Player, Synthesizer } from "./synthesize.ts";

/** Options of {@link Speaker}. */
export interface SpeakerOptions {
  synthesize: Synthesizer;
  play: Player;
  /** Tells the user a chunk could not be synthesised or played (its text is still on every screen). */
  report: (message: string) => void;
  chunker?: ChunkerOptions;
}

/** One chunk, synthesised (`wav` null when synthesis failed). */
interface Audio {
  text: string;
  wav: Uint8Array | null;
}

function ignore(): void {}

/** One reply being spoken. */
class Utterance {
  readonly #abort = new AbortController();
  readonly #input: WritableStreamDefaultWriter<string>;
  readonly #chunks: ReadableStreamDefaultReader<string>;
  readonly #options: SpeakerOptions;
  /** Messages told already: a broken player fails every chunk the same way. */
  readonly #told = new Set<string>();
  /** Resolves when this utterance has finished or been silenced, its processes gone. */
  readonly done: Promise<void>;

  constructor(options: SpeakerOptions, before: Promise<void>) {
    this.#options = options;
    const source = new TransformStream<string, string>();
    this.#input = source.writable.getWriter();
    this.#chunks = source.readable
      .pipeThrough(new SpeechText())
      .pipeThrough(new SpeechChunker(options.chunker))
      .getReader();
    this.done = this.#run(before);
  }

  get silenced(): boolean {
    return this.#abort.signal.aborted;
  }

  write(text: string): void {
    if (!this.silenced) this.#input.write(text).catch(ignore);
  }

  close(): void {
    if (!this.silenced) this.#input.close().catch(ignore);
  }

  silence(): void {
    if (this.silenced) return;
    this.#abort.abort();
    this.#input.abort().catch(ignore);
  }

  #tell(message: string): void {
    if (this.#told.has(message)) return;
    this.#told.add(message);
    this.#options.report(message);
  }

  /** The next chunk, synthesised; null at the reply's end. Rejects only once silenced. */
  async #next(): Promise<Audio | null> {
    const signal = this.#abort.signal;
    const { done, value } = await this.#chunks.read();
    signal.throwIfAborted();
    if (done) return null;
    try {
      return {
        text: value,
        wav: await this.#options.synthesize(value, signal),
      };
    } catch (error) {
      signal.throwIfAborted();
      this.#tell(
        `Could not speak part of the reply (it is on screen): ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
      return { text: value, wav: null };
    }
  }

  async #run(before: Promise<void>): Promise<void> {
    const signal = this.#abort.signal;
    let waited = false;
    try {
      let next = this.#next();
      next.catch(ignore);
      for (;;) {
        const audio = await next;
        if (audio === null || signal.aborted) break;
        next = this.#next(); // n+1 is synthesised while n plays
        next.catch(ignore);
        if (!waited) {
          // Never two replies at once: the one before is silent first.
          await before;
          waited = true;
        }
        if (signal.aborted) break;
        if (audio.wav === null) continue;
        try {
          await this.#options.play(audio.wav, signal);
        } catch (error) {
          if (signal.aborted) break;
          this.#tell(
            `Could not play part of the reply (it is on screen): ${
              error instanceof Error ? error.message : String(error)
            }`,
          );
        }
      }
    } catch (error) {
      if (!signal.aborted) {
        this.#tell(
          `Speaking stopped: ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      }
    } finally {
      this.silence();
      await this.#chunks.cancel().catch(ignore);
      if (!waited) await before;
    }
  }
}

/** Speaks one reply at a time; a new one silences the one before. */
export class Speaker implements AsyncDisposable {
  readonly #options: SpeakerOptions;
  /** The reply whose text is still arriving. */
  #current: Utterance | null = null;
  /** Every utterance not yet done, the newest last. */
  readonly #live = new Set<Utterance>();
  #last: Promise<void> = Promise.resolve();

  /** Creates a silent speaker. */
  constructor(options: SpeakerOptions) {
    this.#options = options;
  }

  /** A new reply starts: whatever was speaking goes silent. */
  begin(): void {
    this.silence();
    const utterance = new Utterance(this.#options, this.#last);
    this.#current = utterance;
    this.#live.add(utterance);
    this.#last = utterance.done;
    utterance.done.then(() => this.#live.delete(utterance));
  }

  /** More of the current reply's text (Markdown as the model writes it). */
  text(delta: string): void {
    this.#current?.write(delta);
  }

  /** The current reply has ended: what is queued is still spoken. */
  end(): void {
    this.#current?.close();
    this.#current = null;
  }

  /** Ends all speech at once: players and synthesisers are ended, queued chunks dropped. */
  silence(): void {
    this.#current = null;
    for (const utterance of this.#live) utterance.silence();
  }

  /** Resolves when nothing speaks and every process it started has exited. */
  idle(): Promise<void> {
    return this.#last;
  }

  /** Silences everything and waits for its processes to exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.silence();
    await this.#last;
  }
}
