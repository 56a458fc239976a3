/**
 * The Unix-socket server: accepts clients, frames their JSON lines, routes
 * commands to the brain one at a time per client, and gives every client its
 * own output queue so a slow reader never holds up the others.
 */

import { AssistantError } from "../base/errors.ts";
import {
  Client,
  inputOf,
  type Limits,
  type PendingRead,
} from "./connection.ts";
import { type LineChunk, LineStream } from "../streams/line_stream.ts";
import { clearSocketPath, removeQuietly } from "./socket_path.ts";
import { describeError, log } from "../base/log.ts";
import {
  BAD_COMMAND,
  type Command,
  LINE_TOO_LONG,
  MAX_LINE_BYTES,
  parseLine,
  type Refusal,
} from "../protocol/commands.ts";
import { encodeEvent, type Event, refField } from "../protocol/events.ts";
import { pause } from "../base/within.ts";

/** What the server needs from the daemon's brain. */
export interface Brain {
  /** The hello event for a client that just connected. */
  hello(): Event;
  /** Runs one command; resolves to the answer for the asker (or null). Shared-state events are broadcast by the brain itself through Server.broadcast. `gone` aborts once the asker is gone. */
  handle(command: Command, gone?: AbortSignal): Promise<Event | null>;
  /** A `stop` is on its way while its client's command runs: ends what that command may wait long for (a file's conversion). The `stop` still runs in its place. */
  interrupt?(): void;
  /** Resolves when the reply in flight ends, or null when none is: a client that half-closes after its `ask` still gets that reply. */
  replyEnd?(): Promise<void> | null;
}

/** Options of {@link Server.listen}. */
export interface ServerOptions {
  /** Socket path. */
  path: string;
  /** Receives the commands and gives each new client its hello. */
  brain: Brain;
  /** Connections beyond this many get an error and are closed. */
  maxClients: number;
  /** Default 2000: a client whose socket accepts no write for this long is dropped. */
  stallMs?: number;
  /** Default 4 MiB: a client is dropped when more than this piles up (besides one event of any size) while its socket accepts nothing. */
  maxBacklog?: number;
  /** Default MAX_LINE_BYTES: longer inbound lines are answered `line too long`. */
  maxLineBytes?: number;
  /** Told the number of connected clients whenever it changes. */
  onClients?: (count: number) => void;
}

/** Commands that start a turn: a client that half-closes after one still gets its reply. */
const TURN_COMMANDS: ReadonlySet<Command["type"]> = new Set([
  "ask",
  "retry",
  "edit",
]);

const DEFAULT_STALL_MS = 2000;
const DEFAULT_MAX_BACKLOG = 4 * 1024 * 1024;
// Pause after a failed accept (EMFILE and the like) so the loop cannot spin.
const ACCEPT_RETRY_MS = 100;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The daemon's socket: one listener, any number of clients up to a limit. */
export class Server implements AsyncDisposable {
  readonly #listener: Deno.UnixListener;
  readonly #path: string;
  readonly #brain: Brain;
  readonly #maxClients: number;
  readonly #onClients: (count: number) => void;
  readonly #limits: Limits;
  readonly #clients = new Set<Client>();
  /** Every open connection, refused ones (still being told why) included. */
  readonly #open = new Set<Client>();
  readonly #tasks = new Set<Promise<void>>();
  readonly #closing = new AbortController();
  #nextId = 1;
  #acceptLoop: Promise<void>;
  readonly #watchEveryMs: number;
  #watchdog: ReturnType<typeof setInterval> | null = null;
  #closed: Promise<void> | null = null;

  private constructor(listener: Deno.UnixListener, options: ServerOptions) {
    this.#listener = listener;
    this.#path = options.path;
    this.#brain = options.brain;
    this.#maxClients = options.maxClients;
    this.#onClients = options.onClients ?? (() => {});
    this.#limits = {
      stallMs: options.stallMs ?? DEFAULT_STALL_MS,
      maxBacklog: options.maxBacklog ?? DEFAULT_MAX_BACKLOG,
      maxLineBytes: options.maxLineBytes ?? MAX_LINE_BYTES,
    };
    this.#acceptLoop = this.#accept();
    this.#watchEveryMs = Math.max(
      10,
      Math.min(250, Math.floor(this.#limits.stallMs / 8)),
    );
  }

  /**
   * One clock for every client's stall limit (a timer per write would cost
   * two runtime calls per token per client), running only while a write
   * waits, so an idle daemon has no timer waking it.
   */
  #watch(): void {
    if (this.#watchdog !== null) return;
    this.#watchdog = setInterval(() => {
      const now = performance.now();
      let writing = false;
      for (const client of this.#open) {
        client.checkStall(now);
        writing ||= client.writing;
      }
      if (!writing) this.#unwatch();
    }, this.#watchEveryMs);
  }

  #unwatch(): void {
    if (this.#watchdog !== null) clearInterval(this.#watchdog);
    this.#watchdog = null;
  }

  /** Refuses (AssistantError) when a live daemon answers on path; replaces a stale socket file; a symlink at the path is removed, never followed; any other file there is refused. Listens, chmods 0600 at once. */
  static async listen(options: ServerOptions): Promise<Server> {
    const { path } = options;
    positive("maxClients", options.maxClients);
    positive("stallMs", options.stallMs);
    positive("maxBacklog", options.maxBacklog);
    positive("maxLineBytes", options.maxLineBytes);
    await clearSocketPath(path);
    let listener: Deno.UnixListener;
    try {
      listener = Deno.listen({ transport: "unix", path });
    } catch (error) {
      // For the person starting the daemon: the system's own words.
      throw new AssistantError(
        `cannot listen on ${path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    try {
      await Deno.chmod(path, 0o600);
    } catch (error) {
      listener.close();
      await removeQuietly(path);
      throw new AssistantError(
        `cannot make ${path} private (chmod 0600): ${(error as Error).message}`,
        { cause: error },
      );
    }
    log.info("listening", { path, max_clients: options.maxClients });
    return new Server(listener, options);
  }

  /** Number of connected clients (refused connections not counted). */
  get clientCount(): number {
    return this.#clients.size;
  }

  /** Sends an event to every connected client. Encodes once. Never blocks on a slow client. */
  broadcast(event: Event): void {
    if (this.#clients.size === 0) return;
    const bytes = encodeEvent(event);
    for (const client of [...this.#clients]) client.send(bytes);
  }

  /** Closes the listener and every client, removes the socket file. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= this.#shutdown();
    return this.#closed;
  }

  /** Same as {@link Server.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #shutdown(): Promise<void> {
    this.#closing.abort();
    try {
      this.#listener.close();
    } catch {
      // Closed already by a failed accept.
    }
    await this.#acceptLoop;
    // Flush what each client is owed (a stopped reply's `done`), then close;
    // a client that stops reading is dropped by its stall timer as always.
    for (const client of [...this.#open]) client.end();
    while (this.#tasks.size > 0) await Promise.all([...this.#tasks]);
    this.#unwatch();
    await removeQuietly(this.#path);
    log.info("server closed", { path: this.#path });
  }

  async #accept(): Promise<void> {
    const signal = this.#closing.signal;
    while (!signal.aborted) {
      let conn: Deno.UnixConn;
      try {
        conn = await this.#listener.accept();
      } catch (error) {
        if (signal.aborted || error instanceof Deno.errors.BadResource) return;
        log.error("accept failed", { error: describeError(error) });
        await pause(ACCEPT_RETRY_MS, signal);
        continue;
      }
      this.#track(this.#serve(conn));
    }
  }

  #track(task: Promise<void>): void {
    const tracked = task.catch((error) => {
      log.error("client task failed", { error: describeError(error) });
    }).finally(() => this.#tasks.delete(tracked));
    this.#tasks.add(tracked);
  }

  async #serve(conn: Deno.UnixConn): Promise<void> {
    const id = this.#nextId++;
    const left = new AbortController();
    const client = new Client(
      id,
      conn,
      this.#limits,
      (gone) => {
        left.abort();
        this.#open.delete(gone);
        if (this.#clients.delete(gone)) this.#counted();
      },
      () => this.#watch(),
    );
    this.#open.add(client);
    if (this.#clients.size >= this.#maxClients) {
      log.warn("client refused", { client: id, max: this.#maxClients });
      client.send(encodeEvent({
        type: "error",
        code: "too_many_clients",
        message: `too many clients (max ${this.#maxClients})`,
      }));
      client.end();
      await client.writeLoop();
      return;
    }
    let hello: Event;
    try {
      hello = this.#brain.hello();
    } catch (error) {
      log.error("hello failed", { client: id, error: describeError(error) });
      client.drop("hello failed");
      return;
    }
    // Joining and queueing hello in one step: no broadcast can come first.
    this.#clients.add(client);
    client.send(encodeEvent(hello));
    log.info("client connected", { client: id, clients: this.#clients.size });
    this.#counted();
    await Promise.all([
      client.writeLoop(),
      this.#readLoop(client, left.signal),
    ]);
  }

  async #readLoop(client: Client, gone: AbortSignal): Promise<void> {
    const pending: PendingRead = { read: null };
    let ownReply: Promise<void> | null = null;
    const lines = new Lookahead(
      inputOf(client.conn, pending)
        .pipeThrough(new LineStream({ maxBytes: this.#limits.maxLineBytes }))
        .getReader(),
    );
    try {
      while (!client.closed) {
        const next = await lines.read();
        if (next.done) break;
        const chunk = next.value;
        if ("tooLong" in chunk) {
          this.#badLine(client, chunk.tooLong, LINE_TOO_LONG);
          continue;
        }
        const command = this.#parse(client, chunk.line);
        if (command === null) continue;
        const running = this.#run(client, command, gone);
        const answer = await client.whileOpen(
          this.#watchForStop(running, lines),
        );
        if (answer) client.send(encodeEvent(answer));
        if (TURN_COMMANDS.has(command.type) && answer?.type !== "error") {
          ownReply = this.#brain.replyEnd?.() ?? null;
        }
      }
      // `printf '{"type":"ask",…}\n' | socat - UNIX-CONNECT:…` ends its input
      // at once: the reply it asked for still goes out before the close. A
      // client that only pinged is closed at once, whoever else is replying.
      if (!client.closed && ownReply) await client.whileOpen(ownReply);
      client.end();
    } catch (error) {
      // A reset, or our own close of a dropped client, ends the input.
      if (!client.closed) {
        client.drop("read failed");
        log.debug("client read error", {
          client: client.id,
          error: describeError(error),
        });
      }
    } finally {
      lines.cancel();
      await pending.read;
    }
  }

  /**
   * Waits for a command while reading the client's next line: a `stop`
   * there interrupts what the command waits for (a converter may run for
   * `tool_timeout`), then waits its turn like any line, so answers and
   * effects keep the order the commands were sent in.
   */
  async #watchForStop<T>(running: Promise<T>, lines: Lookahead): Promise<T> {
    if (!this.#brain.interrupt) return await running;
    const ran = running.then(() => null, () => null);
    // A failed read is met again by the loop's own read, after the answer.
    const read = lines.peek().catch(() => null);
    const next = await Promise.race([ran, read]);
    if (next && !next.done && "line" in next.value && isStop(next.value.line)) {
      this.#brain.interrupt();
    }
    return await running;
  }

  #counted(): void {
    try {
      this.#onClients(this.#clients.size);
    } catch (error) {
      log.error("client count listener failed", {
        error: describeError(error),
      });
    }
  }

  /** Decodes and validates one line; answers and logs it when malformed. */
  #parse(client: Client, line: Uint8Array): Command | null {
    let text: string;
    try {
      text = utf8.decode(line);
    } catch {
      this.#badLine(client, line.length, BAD_COMMAND, "utf8");
      return null;
    }
    if (text.trim() === "") return null;
    const parsed = parseLine(text);
    if (!parsed.ok) {
      this.#badLine(client, line.length, parsed);
      return null;
    }
    return parsed.command;
  }

  /** Answers a malformed line; the log names its length and code, never its content. */
  #badLine(client: Client, bytes: number, no: Refusal, reason?: string): void {
    const { code, message, ref } = no;
    const why = reason ? { reason } : {};
    log.warn("bad line", { client: client.id, bytes, code, ...why });
    client.send(
      encodeEvent({ type: "error", code, message, ...refField(ref) }),
    );
  }

  /** Runs a command; an error becomes the asker's answer, with the command's ref. */
  async #run(
    client: Client,
    command: Command,
    gone: AbortSignal,
  ): Promise<Event | null> {
    const ref = refField(command.ref);
    try {
      return await this.#brain.handle(command, gone);
    } catch (error) {
      // An AssistantError with a code is meant for the client; anything
      // else is a fault, named in the log only.
      const meant = error instanceof AssistantError && error.code
        ? error
        : null;
      if (!meant) {
        log.error("command failed", {
          client: client.id,
          type: command.type,
          error: describeError(error),
        });
      }
      return {
        type: "error",
        code: meant?.code ?? "command_failed",
        message: meant?.message ?? `${command.type} failed`,
        ...ref,
      };
    }
  }
}

/** A reader of lines that can look at the next one before it is taken. */
class Lookahead {
  readonly #reader: ReadableStreamDefaultReader<LineChunk>;
  #next: Promise<ReadableStreamReadResult<LineChunk>> | null = null;

  constructor(reader: ReadableStreamDefaultReader<LineChunk>) {
    this.#reader = reader;
  }

  /** The next line, without taking it. */
  peek(): Promise<ReadableStreamReadResult<LineChunk>> {
    return this.#next ??= this.#reader.read();
  }

  /** Takes the next line. */
  read(): Promise<ReadableStreamReadResult<LineChunk>> {
    const next = this.peek();
    this.#next = null;
    return next;
  }

  /** Stops reading. */
  cancel(): void {
    this.#reader.cancel().catch(() => {});
  }
}

/** Whether a line is a well-formed `stop`. */
function isStop(line: Uint8Array): boolean {
  let text: string;
  try {
    text = utf8.decode(line);
  } catch {
    return false;
  }
  const parsed = parseLine(text);
  return parsed.ok && parsed.command?.type === "stop";
}

function positive(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
    throw new TypeError(
      `Server option ${name} must be a positive integer, got ${value}`,
    );
  }
}
