/**
 * A real llama-server (or its router) as a subprocess on a free loopback
 * port, started the README's way (`llama-server -m model.gguf --jinja`)
 * with a 4096-token context. Every wait is bounded: a server that does not
 * answer within 60 s fails the test with its log's tail.
 */
import type { LlamaBuild } from "./build.ts";

/** How long a server may take to answer `/health` with 200. */
export const START_TIMEOUT_MS = 60_000;

/** What to serve. */
export interface LlamaServerOptions {
  build: LlamaBuild;
  /** The model arguments: `["-m", path]`, or `["--models-dir", dir]` for the router. */
  args: string[];
  /** Context size per slot (`-c`); default 4096. */
  ctx?: number;
}

/** A running llama-server and its log; `await using server = await LlamaServer.start(…)`. */
export class LlamaServer implements AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly #child: Deno.ChildProcess;
  readonly #status: Promise<Deno.CommandStatus>;
  readonly #logDone: Promise<void>;
  #log = "";
  #changed = Promise.withResolvers<void>();
  #exited = false;
  readonly #reading = new AbortController();

  private constructor(child: Deno.ChildProcess, port: number) {
    this.#child = child;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.#status = child.status.then((status) => {
      this.#exited = true;
      this.#notify();
      return status;
    });
    this.#logDone = (async () => {
      const text = child.stderr.pipeThrough(new TextDecoderStream(), {
        signal: this.#reading.signal,
      });
      try {
        for await (const chunk of text) {
          this.#log += chunk;
          this.#notify();
        }
      } catch {
        // Reading was given up: a child of the server still holds its stderr.
      }
    })();
  }

  /** Starts the server and waits until `/health` answers 200 (at most 60 s). */
  static async start(options: LlamaServerOptions): Promise<LlamaServer> {
    const port = freePort();
    const child = new Deno.Command(options.build.server, {
      args: [
        ...options.args,
        "--jinja",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "-c",
        String(options.ctx ?? 4096),
        "--threads",
        "2",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const server = new LlamaServer(child, port);
    try {
      await server.#healthy(AbortSignal.timeout(START_TIMEOUT_MS));
    } catch (error) {
      await server[Symbol.asyncDispose]();
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(
        `llama-server did not start within ${START_TIMEOUT_MS / 1000} s ` +
          `(${options.args.join(" ")}): ${reason}\n${server.#tail}`,
      );
    }
    return server;
  }

  /** Everything the server logged so far. */
  get log(): string {
    return this.#log;
  }

  /** Resolves once the log has `count` lines matching `pattern`; fails after `timeoutMs` or when the server exits. */
  async waitForLog(
    pattern: RegExp,
    count = 1,
    timeoutMs = 20_000,
  ): Promise<void> {
    const global = new RegExp(pattern.source, "gm");
    const signal = AbortSignal.timeout(timeoutMs);
    while ((this.#log.match(global)?.length ?? 0) < count) {
      if (this.#exited) throw new Error(`llama-server exited:\n${this.#tail}`);
      await this.#next(signal, `${count} × ${pattern} in the log`);
    }
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it. */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      this.#child.kill("SIGTERM");
    } catch {
      // Gone already.
    }
    const timer = setTimeout(() => {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }, 10_000);
    await this.#status;
    clearTimeout(timer);
    // The log ends with the process, unless something it started lives on
    // with its stderr: then give up reading after a moment.
    const gaveUp = setTimeout(() => this.#reading.abort(), 2_000);
    await this.#logDone;
    clearTimeout(gaveUp);
  }

  get #tail(): string {
    return this.#log.slice(-2000);
  }

  #notify(): void {
    const changed = this.#changed;
    this.#changed = Promise.withResolvers<void>();
    changed.resolve();
  }

  /** Waits for the next log text or exit; rejects when `signal` ends first. */
  async #next(signal: AbortSignal, what: string): Promise<void> {
    if (signal.aborted) throw new Error(`timed out waiting for ${what}`);
    const aborted = Promise.withResolvers<never>();
    const quit = () =>
      aborted.reject(new Error(`timed out waiting for ${what}`));
    signal.addEventListener("abort", quit, { once: true });
    try {
      await Promise.race([this.#changed.promise, aborted.promise]);
    } finally {
      signal.removeEventListener("abort", quit);
    }
  }

  /** Waits until `/health` says ok: asked once the server says it listens, and again on each new log line. */
  async #healthy(signal: AbortSignal): Promise<void> {
    const listening = /listening on http/;
    while (true) {
      if (this.#exited) throw new Error("it exited");
      if (listening.test(this.#log)) {
        const status = await fetch(`${this.url}/health`, { signal })
          .then(async (response) => {
            await response.body?.cancel();
            return response.status;
          })
          .catch(() => 0);
        if (status === 200) return;
      }
      await this.#next(signal, "/health to answer 200");
    }
  }
}

/** A loopback port nothing listens on now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}
