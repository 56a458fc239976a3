/**
 * A daemon that follows a test's script on a real temporary Unix socket,
 * speaking the protocol's JSON lines, and an OpenAI-compatible
 * transcription server: the voice client's two peers in its tests.
 */
import type { HelloEvent } from "../../src/clients/client.ts";
import { LineStream } from "../../src/streams/line_stream.ts";
import { writeAll } from "../../src/streams/write_all.ts";
import { within } from "./wait.ts";
import { idleHello } from "../support/hello_fixture.ts";

type Json = Record<string, unknown>;

/** The greeting a daemon sends, with `listening`. */
export function hello(listening = false): HelloEvent {
  return idleHello({ listening });
}

/** A daemon that follows a test's script: it greets, records every command, answers `listen` as the daemon does, and sends what the test tells it to every client. */
export class ScriptedDaemon implements AsyncDisposable {
  readonly path: string;
  /** Every command received, in order. */
  readonly commands: Json[] = [];
  /** Whether listening is on, as `hello` reports it. */
  listening = false;
  readonly #listener: Deno.UnixListener;
  /** Greeted connections: what is sent goes to them. */
  readonly #conns = new Set<Deno.UnixConn>();
  /** Every open connection: what close ends. */
  readonly #open = new Set<Deno.UnixConn>();
  readonly #served: Promise<void>[] = [];
  #waiters: (() => void)[] = [];
  readonly #accepting: Promise<void>;

  private constructor(path: string, listener: Deno.UnixListener) {
    this.path = path;
    this.#listener = listener;
    this.#accepting = this.#accept();
  }

  /** Listens on `path`. */
  static start(path: string): ScriptedDaemon {
    return new ScriptedDaemon(
      path,
      Deno.listen({ transport: "unix", path }),
    );
  }

  /** Clients connected now. */
  get clients(): number {
    return this.#conns.size;
  }

  async #accept(): Promise<void> {
    try {
      for await (const conn of this.#listener) {
        this.#open.add(conn);
        this.#served.push(this.#serve(conn));
      }
    } catch {
      // Closed.
    }
  }

  async #serve(conn: Deno.UnixConn): Promise<void> {
    try {
      await writeAll(conn, JSON.stringify(hello(this.listening)) + "\n");
      // Counted once greeted: whatever the test sends comes after hello.
      this.#conns.add(conn);
      this.#wake();
      const lines = conn.readable.pipeThrough(
        new LineStream({ maxBytes: 1 << 20 }),
      );
      for await (const chunk of lines) {
        if (!("line" in chunk)) continue;
        const command = JSON.parse(new TextDecoder().decode(chunk.line));
        this.commands.push(command);
        if (command.type === "listen") {
          this.listening = command.on;
          await this.send({
            type: "listening",
            on: command.on,
            ...(command.ref === undefined ? {} : { ref: command.ref }),
          });
        }
        this.#wake();
      }
    } catch {
      // The client went away, or the daemon was closed.
    } finally {
      this.#conns.delete(conn);
      this.#open.delete(conn);
      try {
        conn.close();
      } catch {
        // Closed already.
      }
      this.#wake();
    }
  }

  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** Resolves once `ready()` is true, re-checked after every connection and command. */
  async until(ready: () => boolean, what: string): Promise<void> {
    await within(
      (async () => {
        while (!ready()) {
          const { promise, resolve } = Promise.withResolvers<void>();
          this.#waiters.push(resolve);
          await promise;
        }
      })(),
      what,
    );
  }

  /** The `count`-th command of this type (1 = the first), waiting for it. */
  async command(type: string, count = 1): Promise<Json> {
    const find = () => this.commands.filter((c) => c.type === type)[count - 1];
    await this.until(() => find() !== undefined, `command ${type} #${count}`);
    return find()!;
  }

  /** Waits for a client to be connected. */
  connected(): Promise<void> {
    return this.until(() => this.#conns.size > 0, "a client to connect");
  }

  /** Sends events to every client, one JSON line each. */
  async send(...events: Json[]): Promise<void> {
    const bytes = events.map((event) => JSON.stringify(event) + "\n").join("");
    await Promise.all(
      [...this.#conns].map((conn) => writeAll(conn, bytes).catch(() => {})),
    );
  }

  /** Sets listening as a `listen` command would: every client is told. */
  async listen(on: boolean): Promise<void> {
    this.listening = on;
    await this.send({ type: "listening", on });
  }

  /** The daemon goes away: the socket closes and every connection with it. */
  async close(): Promise<void> {
    try {
      this.#listener.close();
    } catch {
      // Closed already.
    }
    for (const conn of this.#open) {
      try {
        conn.close();
      } catch {
        // Closed already.
      }
    }
    await this.#accepting;
    await Promise.all(this.#served);
    await Deno.remove(this.path).catch(() => {});
  }

  /** Same as {@link ScriptedDaemon.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** What the fake transcription server was sent. */
export interface Upload {
  model: string | null;
  name: string;
  type: string;
  bytes: Uint8Array;
}

/** An OpenAI-compatible transcription server: answers each upload with the next of `answers` (a text, or a status with a message). */
export class FakeTranscriber implements AsyncDisposable {
  readonly uploads: Upload[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #answers: (string | { status: number; message: string })[];

  /** Starts on an ephemeral loopback port. */
  constructor(answers: (string | { status: number; message: string })[]) {
    this.#answers = answers;
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (request) => {
        const url = new URL(request.url);
        if (
          request.method !== "POST" ||
          url.pathname !== "/v1/audio/transcriptions"
        ) {
          return Response.json({ error: { message: "not found" } }, {
            status: 404,
          });
        }
        const form = await request.formData();
        const file = form.get("file");
        if (!(file instanceof File)) {
          return Response.json({ error: { message: "no file" } }, {
            status: 400,
          });
        }
        this.uploads.push({
          model: form.get("model") as string | null,
          name: file.name,
          type: file.type,
          bytes: new Uint8Array(await file.arrayBuffer()),
        });
        const answer = this.#answers.shift() ?? "";
        return typeof answer === "string"
          ? Response.json({ text: answer })
          : Response.json({ error: { message: answer.message } }, {
            status: answer.status,
          });
      },
    );
  }

  /** Its base URL. */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Stops it. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#server.shutdown();
  }
}
