/**
 * The MCP stdio transport over `Deno.Command`. The SDK's own stdio transport
 * spawns through node's child_process with an environment it builds from
 * variables the daemon may not read, and replaces the server's environment
 * instead of adding to it; this one starts the resolved executable that
 * `--allow-run` names, lets the server inherit the daemon's environment
 * plus its `env` table, and frames JSON-RPC messages one per line.
 */
import { within } from "../base/within.ts";
import type {
  Transport,
  TransportSendOptions,
} from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import {
  deserializeMessage,
  serializeMessage,
} from "@modelcontextprotocol/sdk/shared/stdio.js";
import { LineStream } from "../streams/line_stream.ts";
import { TailCollector } from "./bounded_output.ts";

/** What to start. */
export interface ProcessTransportOptions {
  /** The resolved executable (what `--allow-run` grants). */
  executable: string;
  args: string[];
  /** Added to the inherited environment. */
  env: Record<string, string>;
  cwd: string;
  /** Longest message accepted from the server, in bytes; default 64 MiB. */
  maxMessageBytes?: number;
}

/** Bytes of the server's stderr kept to say why it failed. */
const STDERR_TAIL = 2048;
/** After closing its stdin, how long a server has to exit before SIGTERM, then SIGKILL. */
const CLOSE_GRACE_MS = 2000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A server process spoken to over its stdin and stdout. */
export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  /** The tail of the server's stderr, for reports. */
  readonly stderr = new TailCollector(STDERR_TAIL);
  readonly #options: ProcessTransportOptions;
  #child: Deno.ChildProcess | null = null;
  #writer: WritableStreamDefaultWriter<Uint8Array> | null = null;
  #status: Promise<Deno.CommandStatus> | null = null;
  #drained: Promise<void> = Promise.resolve();
  #closed = false;

  /** Prepares the transport; `start` spawns the server. */
  constructor(options: ProcessTransportOptions) {
    this.#options = options;
  }

  /** Resolves with the server's exit status once it has exited; null before `start`. */
  get exited(): Promise<Deno.CommandStatus> | null {
    return this.#status;
  }

  /** Resolves once the server has exited and its output pipes have ended (at most a moment after an exit). */
  get drained(): Promise<void> {
    return this.#drained;
  }

  /** Spawns the server; throws (NotFound, NotCapable…) when it cannot start. */
  start(): Promise<void> {
    if (this.#child) throw new Error("ProcessTransport already started");
    const { executable, args, env, cwd } = this.#options;
    const child = new Deno.Command(executable, {
      args,
      env,
      cwd,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // Its own process group: a terminal's Ctrl-C reaches the daemon, which
      // then ends the server itself.
      detached: true,
    }).spawn();
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#writer.closed.catch(() => {});
    this.#status = child.status;
    const stderr = child.stderr.pipeTo(this.stderr.writable).catch(() => {});
    const stdout = this.#read(child.stdout);
    this.#drained = Promise.all([stdout, stderr, child.status]).then(
      () => {},
      () => {},
    );
    this.#drained.finally(() => {
      this.#closed = true;
      this.onclose?.();
    });
    return Promise.resolve();
  }

  async #read(stdout: ReadableStream<Uint8Array>): Promise<void> {
    const lines = stdout.pipeThrough(
      new LineStream({ maxBytes: this.#options.maxMessageBytes ?? 64 << 20 }),
    );
    try {
      for await (const chunk of lines) {
        if ("tooLong" in chunk) {
          this.onerror?.(
            new RangeError(`message of ${chunk.tooLong} bytes skipped`),
          );
          continue;
        }
        const text = decoder.decode(chunk.line);
        if (text.trim() === "") continue;
        let message: JSONRPCMessage;
        try {
          message = deserializeMessage(text);
        } catch (error) {
          // A server that logs to stdout: the line is not the protocol's.
          this.onerror?.(
            new SyntaxError(
              `line of ${chunk.line.length} bytes is no JSON-RPC message`,
              {
                cause: error,
              },
            ),
          );
          continue;
        }
        this.onmessage?.(message);
      }
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Writes one message as a line to the server's stdin. */
  async send(
    message: JSONRPCMessage,
    _options?: TransportSendOptions,
  ): Promise<void> {
    if (!this.#writer || this.#closed) throw new Error("Not connected");
    await this.#writer.write(encoder.encode(serializeMessage(message)));
  }

  /** Closes stdin, then SIGTERM and SIGKILL if the server does not exit. */
  async close(): Promise<void> {
    const child = this.#child;
    const status = this.#status;
    if (!child || !status) return;
    await this.#writer?.close().catch(() => {});
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (await within(status, CLOSE_GRACE_MS)) return;
      try {
        child.kill(signal);
      } catch {
        // Gone already.
      }
    }
    await status;
  }
}
