/**
 * One recording: `record_command` writes a WAV to stdout until it is ended.
 * Ending it with SIGINT lets a recorder such as arecord finish cleanly; the
 * WAV's sizes, which a recorder writing to a pipe leaves as placeholders,
 * are then set to what arrived.
 */
import { AssistantError } from "../base/errors.ts";
import { concat } from "../streams/bytes.ts";
import { collect, lastLine, spawnError } from "./run_command.ts";
import { completeWav, isWav, wavData } from "./wav.ts";

/** About ten minutes of 16 kHz mono 16-bit audio, with room for richer formats. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
/** How long an ended recorder gets to exit before SIGKILL. */
const END_GRACE_MS = 2000;
const STDERR_KEEP = 4096;
/** Bytes within which a WAV's header ends and its first samples show. */
const HEAD_BYTES = 4096;
const KEY = "record_command";

/** Options of {@link Recording.start}. */
export interface RecordingOptions {
  /** Most bytes kept; the recorder is ended when it passes them. Default 64 MiB. */
  maxBytes?: number;
}

/** A recorder running, its audio kept as it arrives. */
export class Recording implements AsyncDisposable {
  /** Resolves once the first samples have arrived: the microphone works. */
  readonly started: Promise<void>;
  /** Resolves when the recorder has exited, ended or on its own. */
  readonly exited: Promise<Deno.CommandStatus>;
  readonly #child: Deno.ChildProcess;
  readonly #audio: Promise<Uint8Array[]>;
  readonly #stderr: Promise<{ bytes: Uint8Array }>;
  readonly #name: string;
  #ending = false;
  #full = false;
  /** It exited before it was ended. */
  #onItsOwn = false;
  #grace: ReturnType<typeof setTimeout> | undefined;

  private constructor(child: Deno.ChildProcess, name: string, max: number) {
    this.#child = child;
    this.#name = name;
    const started = Promise.withResolvers<void>();
    this.started = started.promise;
    this.exited = child.status;
    this.#stderr = collect(child.stderr, STDERR_KEEP, true);
    this.#audio = (async () => {
      const parts: Uint8Array[] = [];
      let size = 0;
      for await (const part of child.stdout) {
        // Started once samples flow, not with the header alone.
        if (size < HEAD_BYTES) {
          const head = concat([...parts, part]);
          if (!isWav(head) || (wavData(head)?.length ?? 0) > 0) {
            started.resolve();
          }
        }
        if (size + part.length > max) {
          parts.push(part.subarray(0, max - size));
          this.#full = true;
          this.#end();
          break;
        }
        parts.push(part);
        size += part.length;
      }
      return parts;
    })();
    this.exited.then(() => {
      clearTimeout(this.#grace);
      if (!this.#ending) this.#onItsOwn = true;
    });
  }

  /** Starts `argv`; AssistantError naming `record_command` when it cannot start. */
  static start(argv: readonly string[], options: RecordingOptions = {}) {
    const [name = "", ...args] = argv;
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(name, {
        args,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (error) {
      throw spawnError(KEY, argv, error);
    }
    return new Recording(child, name, options.maxBytes ?? DEFAULT_MAX_BYTES);
  }

  /** Whether the recorder was ended because the recording reached its size limit. */
  get full(): boolean {
    return this.#full;
  }

  #end(signal: Deno.Signal = "SIGINT"): void {
    if (this.#ending) return;
    this.#ending = true;
    try {
      this.#child.kill(signal);
    } catch {
      return; // It has exited.
    }
    this.#grace = setTimeout(() => {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // It has exited.
      }
    }, END_GRACE_MS);
  }

  /**
   * Ends the recorder, if it still runs, and resolves to the WAV with its
   * sizes set. AssistantError naming `record_command` when the recorder
   * failed on its own (no microphone), wrote no WAV or recorded nothing.
   */
  async finish(): Promise<Uint8Array> {
    this.#end();
    const [status, parts, stderr] = await Promise.all([
      this.exited,
      this.#audio,
      this.#stderr,
    ]);
    const said = lastLine(stderr.bytes);
    const because = said === "" ? "" : `: ${said}`;
    // It failed on its own (no microphone, a bad argument): it says why.
    if (this.#onItsOwn && !status.success) {
      throw new AssistantError(
        `${KEY}: ${this.#name} exited with ${
          status.signal ?? status.code
        }${because}: check the microphone, or change ${KEY} in config.toml`,
      );
    }
    const bytes = concat(parts);
    if (!isWav(bytes)) {
      throw new AssistantError(
        bytes.length === 0
          ? `${KEY}: ${this.#name} recorded nothing${because}: check the microphone`
          : `${KEY}: ${this.#name} wrote no WAV: have it write WAV to stdout (arecord: -t wav)`,
      );
    }
    if ((wavData(bytes)?.length ?? 0) === 0) {
      throw new AssistantError(
        `${KEY}: ${this.#name} recorded no sound${because}: check the microphone`,
      );
    }
    return completeWav(bytes);
  }

  /** Ends the recorder and drops what it recorded. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#end("SIGTERM");
    await Promise.allSettled([this.exited, this.#audio, this.#stderr]);
  }
}
