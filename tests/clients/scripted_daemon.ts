/**
 * A stand-in daemon on a real Unix socket, for client tests whose daemon
 * side is scripted: it greets the first client that connects, then hands
 * each command it sends to the test, which answers with events of its own.
 */
import { join } from "node:path";
import type { HelloEvent } from "../../src/clients/client.ts";
import { within } from "../support/client_harness.ts";
import { idleHello } from "../support/hello_fixture.ts";

/** A command as the client sent it. */
export type Sent = Record<string, unknown> & { type: string };

/** The stand-in daemon; `await using daemon = await ScriptedDaemon.start()`. */
export class ScriptedDaemon implements AsyncDisposable {
  /** The runtime directory: the client's `XDG_RUNTIME_DIR`. */
  readonly dir: string;
  /** The socket. */
  readonly path: string;
  readonly #listener: Deno.Listener;
  readonly #conn: Promise<Deno.Conn>;
  readonly #commands: Sent[] = [];
  #arrived = Promise.withResolvers<void>();
  #serving: Promise<void>;

  private constructor(dir: string, hello: HelloEvent) {
    this.dir = dir;
    this.path = join(dir, "desktop-assistant.sock");
    this.#listener = Deno.listen({ transport: "unix", path: this.path });
    this.#conn = this.#listener.accept();
    this.#serving = this.#serve(hello).catch(() => {});
  }

  /** Listens in a new runtime directory; greets with a `hello` of an idle daemon and a new conversation, with `hello` over it. */
  static async start(hello: Partial<HelloEvent> = {}): Promise<ScriptedDaemon> {
    const dir = await Deno.makeTempDir({ prefix: "da-scripted-" });
    return new ScriptedDaemon(dir, idleHello(hello));
  }

  /** Sends an event to the client. */
  async send(event: Record<string, unknown>): Promise<void> {
    const conn = await this.#conn;
    await conn.write(new TextEncoder().encode(JSON.stringify(event) + "\n"));
  }

  /** The next command the client sends. */
  async next(): Promise<Sent> {
    return await within(
      (async () => {
        while (this.#commands.length === 0) await this.#arrived.promise;
        return this.#commands.shift()!;
      })(),
      "a command from the client",
    );
  }

  async #serve(hello: HelloEvent): Promise<void> {
    await this.send(hello);
    const conn = await this.#conn;
    let text = "";
    for await (
      const chunk of conn.readable.pipeThrough(new TextDecoderStream())
    ) {
      text += chunk;
      let newline;
      while ((newline = text.indexOf("\n")) !== -1) {
        const line = text.slice(0, newline);
        text = text.slice(newline + 1);
        if (line.trim() === "") continue;
        this.#commands.push(JSON.parse(line));
        const arrived = this.#arrived;
        this.#arrived = Promise.withResolvers<void>();
        arrived.resolve();
      }
    }
  }

  /** Closes the socket and removes its directory. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#listener.close();
    await this.#conn.then((conn) => {
      try {
        conn.close();
      } catch {
        // The client closed it first.
      }
    }, () => {});
    await this.#serving;
    await Deno.remove(this.dir, { recursive: true });
  }
}
