/**
 * The assistant in this process, as the daemon wires it (config from a real
 * TOML file, tools from their files, a real SQLite file, the llama-server
 * client, the socket server on a temporary Unix socket), without starting a
 * daemon process: for the tests of what the assistant does, where grants and
 * signals are not the point. Clients connect over the real socket, so a test
 * reads exactly what a canvas would.
 */
import { Assistant } from "../../src/assistant/assistant.ts";
import { loadConfig } from "../../src/base/config.ts";
import { type LogSink, setLogSink } from "../../src/base/log.ts";
import { type Paths, resolvePaths } from "../../src/base/paths.ts";
import { LlmClient } from "../../src/llm/client.ts";
import { Server } from "../../src/server/server.ts";
import { Store } from "../../src/store/store.ts";
import { loadTools } from "../../src/tools/load.ts";
import { builtinsOff, daemonEnv } from "./daemon_harness.ts";
import { SocketClient } from "./socket_client.ts";

/** Options of an assistant under test. */
export interface LocalDaemonOptions {
  /** Base URL of the (fake) llama-server. */
  llmUrl: string;
  /** Extra TOML appended to the config file. */
  config?: string;
  /** Tool dirs; default: none, so tests choose their tools. */
  toolsDirs?: string[];
  /** Reuse an existing home (a second start on the same history); default a new temp dir. */
  home?: string;
}

/** An assistant and its socket server, in this process, with its log captured. */
export class LocalDaemon implements AsyncDisposable {
  readonly home: string;
  readonly paths: Paths;
  readonly assistant: Assistant;
  readonly store: Store;
  readonly #server: Server;
  readonly #ownsHome: boolean;
  readonly #previousSink: LogSink;
  #log = "";
  #logChanged = Promise.withResolvers<void>();
  #stopped: Promise<void> | null = null;

  private constructor(
    parts: {
      home: string;
      paths: Paths;
      assistant: Assistant;
      store: Store;
      server: Server;
      ownsHome: boolean;
    },
    previousSink: LogSink,
    log: { text: string; sink: (next: (line: string) => void) => void },
  ) {
    this.home = parts.home;
    this.paths = parts.paths;
    this.assistant = parts.assistant;
    this.store = parts.store;
    this.#server = parts.server;
    this.#ownsHome = parts.ownsHome;
    this.#previousSink = previousSink;
    this.#log = log.text;
    log.sink((line) => {
      this.#log += line;
      const changed = this.#logChanged;
      this.#logChanged = Promise.withResolvers<void>();
      changed.resolve();
    });
  }

  /** Writes the config, loads it and the tools, opens the history and listens. */
  static async start(options: LocalDaemonOptions): Promise<LocalDaemon> {
    const ownsHome = options.home === undefined;
    const home = options.home ?? await Deno.makeTempDir({ prefix: "da-test-" });
    const env = daemonEnv(home);
    for (
      const dir of [
        env.XDG_RUNTIME_DIR!,
        `${env.XDG_CONFIG_HOME}/desktop-assistant`,
      ]
    ) {
      await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    }
    const paths = resolvePaths((name) => env[name]);
    await Deno.writeTextFile(
      paths.configFile,
      `llm_url = ${JSON.stringify(options.llmUrl)}\n` +
        `tools_dirs = ${JSON.stringify(options.toolsDirs ?? [])}\n` +
        builtinsOff(options.config) + (options.config ?? ""),
    );
    // Lines logged before the daemon object exists are kept too.
    let early = "";
    let write = (line: string) => {
      early += line;
    };
    const previousSink = setLogSink({ write: (line) => write(line) });
    try {
      const { config } = await loadConfig(paths, (name) => env[name]);
      const { tools } = await loadTools(config.tools_dirs);
      const store = new Store(paths.dbPath);
      const llm = new LlmClient({
        url: config.llm_url,
        model: config.model,
        stallMs: config.stall_timeout * 1000,
      });
      let server: Server | null = null;
      const assistant = new Assistant({
        store,
        llm,
        config,
        tools,
        confirm: {
          tools: config.confirm_tools,
          timeoutSeconds: config.confirm_timeout,
        },
        emit: (event) => server?.broadcast(event),
      });
      server = await Server.listen({
        path: paths.socketPath,
        brain: assistant,
        maxClients: config.max_clients,
      });
      return new LocalDaemon(
        { home, paths, assistant, store, server, ownsHome },
        previousSink,
        {
          text: early,
          sink: (next) => {
            write = next;
          },
        },
      );
    } catch (error) {
      setLogSink(previousSink);
      if (ownsHome) await Deno.remove(home, { recursive: true });
      throw error;
    }
  }

  /** Everything logged so far. */
  get log(): string {
    return this.#log;
  }

  /** Resolves once the log has `count` lines matching `pattern`; fails after `timeoutMs`. */
  async waitForLog(
    pattern: RegExp,
    count = 1,
    timeoutMs = 20_000,
  ): Promise<void> {
    const global = new RegExp(pattern.source, "gm");
    const found = () => (this.#log.match(global)?.length ?? 0) >= count;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.#logChanged.resolve();
    }, timeoutMs);
    try {
      while (!found()) {
        if (timedOut) {
          throw new Error(
            `Timed out waiting for ${count} × ${pattern} in the log:\n${this.#log}`,
          );
        }
        await this.#logChanged.promise;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Connects a client to the socket. */
  connect(): Promise<SocketClient> {
    return SocketClient.connect(this.paths.socketPath);
  }

  /** Shuts down as the daemon does: the reply in flight ends, clients are closed, the history is closed. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.assistant.shutdown();
      await this.#server.close();
      await this.assistant.settled();
      this.store.close();
      setLogSink(this.#previousSink);
    })();
    return this.#stopped;
  }

  /** Stops and removes the home unless it was lent. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
    if (this.#ownsHome) await Deno.remove(this.home, { recursive: true });
  }
}
