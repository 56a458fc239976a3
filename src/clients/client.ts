/**
 * The terminal clients' side of the socket: finds it exactly as the daemon
 * does, connects, sends commands as JSON lines and reads events back.
 */
import { type Env, socketPath } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { type LineChunk, LineStream } from "../streams/line_stream.ts";
import type { Command } from "../protocol/commands.ts";
import type { Event } from "../protocol/events.ts";
import { writeAll } from "../streams/write_all.ts";
import { pause } from "../base/within.ts";

/** The `hello` event a client gets first. */
export type HelloEvent = Extract<Event, { type: "hello" }>;

/** The environment variables a client reads: only what locates the socket. */
export const CLIENT_ENV_VARS: readonly string[] = Object.freeze([
  "XDG_RUNTIME_DIR",
]);

/** How to start the daemon, appended to every "no daemon" message. */
export const START_HINT =
  "start it with: deno task start (or assistant.sh start)";

/** The message for a socket nobody answers on. */
export function noDaemonMessage(path: string): string {
  return `no daemon answers on ${path}; ${START_HINT}`;
}

/** The deno permission flags a client needs to reach the socket at `path`. */
export function clientFlags(path: string): string[] {
  if (path.includes(",")) {
    throw new AssistantError(
      `The socket path ${path} contains a comma, which a Deno permission list cannot express: point XDG_RUNTIME_DIR elsewhere`,
    );
  }
  return [
    `--allow-net=unix:${path}`,
    `--allow-read=${path}`,
    `--allow-write=${path}`,
    `--allow-env=${CLIENT_ENV_VARS.join(",")}`,
  ];
}

/** Largest event line a client accepts: a `hello` carries a whole conversation. */
const DEFAULT_MAX_LINE_BYTES = 256 * 1024 * 1024;
const DEFAULT_HELLO_TIMEOUT_MS = 10_000;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

/** A daemon answered on the socket but would not serve this client (too many clients, a bad greeting): not "no daemon". */
export class DaemonRefusedError extends AssistantError {
  /** Creates the error; the message says what the daemon did. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "DaemonRefusedError";
  }
}

/** Parses framed lines into events: SyntaxError for a line that is not JSON, TypeError for JSON that is no event. */
export class EventStream extends TransformStream<LineChunk, Event> {
  /** Creates the parser; blank lines are skipped. */
  constructor() {
    super({
      transform(chunk, controller) {
        if ("tooLong" in chunk) {
          throw new RangeError(
            `The daemon sent an event line of ${chunk.tooLong} bytes, over the client's limit: open a shorter conversation`,
          );
        }
        const text = utf8.decode(chunk.line);
        if (text.trim() === "") return;
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (error) {
          throw new SyntaxError(
            `The daemon sent a line of ${chunk.line.length} bytes that is not JSON: check that the socket belongs to desktop-assistant`,
            { cause: error },
          );
        }
        if (
          typeof value !== "object" || value === null || Array.isArray(value) ||
          typeof (value as { type?: unknown }).type !== "string"
        ) {
          throw new TypeError(
            `The daemon sent a line of ${chunk.line.length} bytes that is no event (no string "type"): check that the socket belongs to desktop-assistant`,
          );
        }
        controller.enqueue(value as Event);
      },
    });
  }
}

/** Options of {@link DaemonClient.connect}. */
export interface ConnectOptions {
  /** Reads the environment; default Deno.env. */
  env?: Env;
  /** The socket path; default derived from the environment like the daemon does. */
  path?: string;
  /** How long to wait for `hello`; default 10 000 ms. */
  helloTimeoutMs?: number;
  /** Longest event line accepted, in bytes. */
  maxLineBytes?: number;
}

/** Resolves the socket path, turning a missing env grant into a clear error. */
export function clientSocketPath(env?: Env): string {
  try {
    return socketPath(env);
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) {
      throw new AssistantError(
        `No permission to read XDG_RUNTIME_DIR: run with --allow-env=${
          CLIENT_ENV_VARS.join(",")
        }`,
        { cause: error },
      );
    }
    throw error;
  }
}

async function open(path: string): Promise<Deno.UnixConn> {
  try {
    return await Deno.connect({ transport: "unix", path });
  } catch (error) {
    if (
      error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.ConnectionRefused
    ) {
      throw new AssistantError(noDaemonMessage(path), { cause: error });
    }
    if (error instanceof Deno.errors.NotCapable) {
      throw new AssistantError(
        `No permission to use the socket ${path}: run with ${
          clientFlags(path).join(" ")
        }`,
        { cause: error },
      );
    }
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new AssistantError(
        `The socket ${path} is not accessible to this user: run the client as the user who started the daemon`,
        { cause: error },
      );
    }
    throw new AssistantError(
      `Cannot connect to ${path} (${
        error instanceof Error ? error.message : String(error)
      }): check the daemon with assistant.sh status`,
      { cause: error },
    );
  }
}

/** A connection to the daemon, greeted: events in order, commands out. */
export class DaemonClient implements AsyncDisposable {
  /** The socket this client is connected to. */
  readonly path: string;
  /** The daemon's greeting: state and the current conversation. */
  readonly hello: HelloEvent;
  readonly #conn: Deno.UnixConn;
  readonly #reader: ReadableStreamDefaultReader<Event>;
  // Refs are seen by every client: a random part keeps two clients' apart.
  readonly #session = crypto.randomUUID();
  #refs = 0;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  private constructor(
    path: string,
    conn: Deno.UnixConn,
    reader: ReadableStreamDefaultReader<Event>,
    hello: HelloEvent,
  ) {
    this.path = path;
    this.#conn = conn;
    this.#reader = reader;
    this.hello = hello;
  }

  /** Connects and waits for `hello`; AssistantError when no daemon answers. */
  static async connect(options: ConnectOptions = {}): Promise<DaemonClient> {
    const path = options.path ?? clientSocketPath(options.env);
    const conn = await open(path);
    const reader = conn.readable
      .pipeThrough(
        new LineStream({
          maxBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
        }),
      )
      .pipeThrough(new EventStream())
      .getReader();
    const fail = async (error: AssistantError): Promise<never> => {
      await reader.cancel().catch(() => {});
      closeQuietly(conn);
      throw error;
    };
    const limit = options.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), limit);
    });
    let first: ReadableStreamReadResult<Event> | "timeout";
    try {
      first = await Promise.race([reader.read(), timeout]);
    } catch (error) {
      // A line that is no event is a bad greeting; a broken connection is
      // a daemon that went away.
      const garbled = error instanceof SyntaxError ||
        error instanceof TypeError || error instanceof RangeError;
      return await fail(
        garbled
          ? new DaemonRefusedError(
            `The daemon on ${path} sent a bad greeting: check that the socket belongs to desktop-assistant`,
            { cause: error },
          )
          : new AssistantError(
            `The daemon on ${path} closed the connection before greeting: check it with assistant.sh status`,
            { cause: error },
          ),
      );
    } finally {
      clearTimeout(timer);
    }
    if (first === "timeout") {
      return await fail(
        new AssistantError(
          `The daemon on ${path} sent no greeting within ${limit} ms: check it with assistant.sh status`,
        ),
      );
    }
    if (first.done) {
      return await fail(
        new AssistantError(
          `The daemon on ${path} closed the connection before greeting: check it with assistant.sh status`,
        ),
      );
    }
    const event = first.value;
    if (event.type === "error") {
      return await fail(
        new DaemonRefusedError(
          `The daemon refused the connection: ${event.message}`,
        ),
      );
    }
    if (event.type !== "hello") {
      return await fail(
        new DaemonRefusedError(
          `The daemon on ${path} greeted with "${event.type}" instead of "hello": update the client or the daemon`,
        ),
      );
    }
    return new DaemonClient(path, conn, reader, event);
  }

  /** The next event, or null once the daemon has closed the connection (or this client was closed). */
  async next(): Promise<Event | null> {
    if (this.#closed) return null;
    try {
      const { done, value } = await this.#reader.read();
      return done ? null : value;
    } catch (error) {
      if (this.#closed || isDisconnect(error)) return null;
      throw error;
    }
  }

  /** A ref no other command of any client carries: to find this command's answers and turn. */
  nextRef(): string {
    return `${this.#session}-${++this.#refs}`;
  }

  /** Sends one command as a JSON line; writes never interleave. AssistantError when the daemon has gone. */
  send(command: Command): Promise<void> {
    const bytes = encoder.encode(commandLine(command) + "\n");
    const write = this.#writing.then(() => this.#writeAll(bytes));
    this.#writing = write.catch(() => {});
    return write;
  }

  async #writeAll(bytes: Uint8Array): Promise<void> {
    if (this.#closed) {
      throw new AssistantError("The connection to the daemon is closed");
    }
    try {
      await writeAll(this.#conn, bytes);
    } catch (error) {
      throw new AssistantError(
        `The daemon on ${this.path} went away; ${START_HINT}`,
        { cause: error },
      );
    }
  }

  /** Closes the connection; idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writing;
    await this.#reader.cancel().catch(() => {});
    closeQuietly(this.#conn);
  }

  /** Same as {@link DaemonClient.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** A command as its line, without the newline: a file's bytes go in base64, as the protocol carries them. */
export function commandLine(command: Command): string {
  return JSON.stringify(
    command,
    (_key, value) => value instanceof Uint8Array ? value.toBase64() : value,
  );
}

function isDisconnect(error: unknown): boolean {
  return error instanceof Deno.errors.ConnectionReset ||
    error instanceof Deno.errors.BrokenPipe ||
    error instanceof Deno.errors.BadResource ||
    error instanceof Deno.errors.Interrupted;
}

function closeQuietly(conn: Deno.UnixConn): void {
  try {
    conn.close();
  } catch {
    // Closed already, by the readable's cancel or a failed write.
  }
}

/**
 * Connects for a command-line client; when that fails, hands the reason to
 * `report` and resolves to the exit code: 1 when a daemon answered but
 * refused, 2 when none answers.
 */
export async function connectOrExplain(
  env: Env | undefined,
  report: (line: string) => unknown,
): Promise<DaemonClient | 1 | 2> {
  try {
    return await DaemonClient.connect(env ? { env } : {});
  } catch (error) {
    if (!(error instanceof AssistantError)) throw error;
    await report(`${error.message}\n`);
    return error instanceof DaemonRefusedError ? 1 : 2;
  }
}

/** Connects again once a daemon answers at `path`, trying every `retryMs`; null when `signal` aborts first. */
export async function reconnect(
  path: string,
  signal: AbortSignal,
  retryMs: number,
): Promise<DaemonClient | null> {
  while (!signal.aborted) {
    try {
      return await DaemonClient.connect({ path });
    } catch (error) {
      if (!(error instanceof AssistantError)) throw error;
    }
    await pause(retryMs, signal);
  }
  return null;
}
