/** Starts the real daemon as a subprocess with its derived flags, in temporary XDG dirs. */
import { type Paths, resolvePaths } from "../../src/base/paths.ts";
import { deriveDaemonFlags } from "../../src/launch/launch.ts";
import { SocketClient } from "./socket_client.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** Options for a daemon under test. */
export interface DaemonOptions {
  /** Base URL of the (fake) llama-server. */
  llmUrl: string;
  /** Extra TOML appended to the config file. */
  config?: string;
  /** Tool dirs; default: none, so tests choose their tools. */
  toolsDirs?: string[];
  /** Reuse an existing home (restart after a crash); default a new temp dir. */
  home?: string;
  /** Flags to use instead of the derived ones. */
  flags?: string[];
}

/** A running daemon subprocess, its dirs and its log. */
export class Daemon implements AsyncDisposable {
  readonly home: string;
  readonly paths: Paths;
  readonly env: Record<string, string>;
  readonly flags: string[];
  readonly child: Deno.ChildProcess;
  #log = "";
  #logChanged = Promise.withResolvers<void>();
  #logDone: Promise<void>;
  #status: Promise<Deno.CommandStatus>;
  #ownsHome: boolean;

  private constructor(
    home: string,
    paths: Paths,
    env: Record<string, string>,
    flags: string[],
    child: Deno.ChildProcess,
    ownsHome: boolean,
    ready: PromiseWithResolvers<void>,
  ) {
    this.home = home;
    this.paths = paths;
    this.env = env;
    this.flags = flags;
    this.child = child;
    this.#ownsHome = ownsHome;
    this.#status = child.status;
    this.#logDone = (async () => {
      const lines = child.stderr.pipeThrough(new TextDecoderStream());
      for await (const chunk of lines) {
        this.#log += chunk;
        const changed = this.#logChanged;
        this.#logChanged = Promise.withResolvers<void>();
        changed.resolve();
        if (/ info listening /.test(this.#log)) ready.resolve();
      }
    })();
    // The whole log first: a daemon that refuses to start says why last.
    Promise.all([this.#status, this.#logDone.catch(() => {})]).then((
      [status],
    ) => {
      ready.reject(
        new Error(
          `daemon exited with ${status.code} before listening:\n${this.#log}`,
        ),
      );
    });
  }

  /** Writes the config, derives the flags and starts the daemon; resolves once it listens. */
  static async start(options: DaemonOptions): Promise<Daemon> {
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
    const toolsDirs = options.toolsDirs ?? [];
    await Deno.writeTextFile(
      paths.configFile,
      `llm_url = ${JSON.stringify(options.llmUrl)}\n` +
        `tools_dirs = ${JSON.stringify(toolsDirs)}\n` +
        builtinsOff(options.config) + (options.config ?? ""),
    );
    // The flags `main.ts flags` would print for this home.
    const flags = options.flags ??
      (await deriveDaemonFlags({ env: (name) => env[name] })).flags;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", ...flags, MAIN, "serve"],
      env: { ...inheritedEnv(), ...env },
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const ready = Promise.withResolvers<void>();
    const daemon = new Daemon(home, paths, env, flags, child, ownsHome, ready);
    try {
      await ready.promise;
    } catch (error) {
      await daemon[Symbol.asyncDispose]();
      throw error;
    }
    return daemon;
  }

  /** Everything the daemon logged so far. */
  get log(): string {
    return this.#log;
  }

  /** Resolves once the log has `count` lines matching `pattern`; fails after `timeoutMs` or if the daemon exits. */
  async waitForLog(
    pattern: RegExp,
    count = 1,
    timeoutMs = 20_000,
  ): Promise<void> {
    const global = new RegExp(pattern.source, "gm");
    const found = () => (this.#log.match(global)?.length ?? 0) >= count;
    let exited = false;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.#logChanged.resolve();
    }, timeoutMs);
    const watch = this.#status.then(() => {
      exited = true;
    });
    try {
      while (!found()) {
        if (timedOut || exited) {
          throw new Error(
            `${
              timedOut ? "Timed out" : "The daemon exited"
            } waiting for ${count} × ${pattern} in the log:\n${this.#log}`,
          );
        }
        await Promise.race([this.#logChanged.promise, watch]);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Connects a client to the daemon's socket. */
  connect(): Promise<SocketClient> {
    return SocketClient.connect(this.paths.socketPath);
  }

  /** Sends a signal and waits for the exit. */
  async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
    try {
      this.child.kill(signal);
    } catch {
      // Already gone.
    }
    const status = await this.#status;
    await this.#logDone;
    return status;
  }

  /** Stops the daemon if running and removes its home unless it was lent. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop("SIGKILL");
    if (this.#ownsHome) await Deno.remove(this.home, { recursive: true });
  }
}

/**
 * `memory = "off"` and `recall = false` unless the config sets them: tests
 * see only the requests and tools they are about, and the tests of memory
 * and recall turn them on.
 */
export function builtinsOff(config: string | undefined): string {
  const sets = (key: string) =>
    new RegExp(`^\\s*${key}\\s*=`, "m").test(config ?? "");
  return (sets("memory") ? "" : `memory = "off"\n`) +
    (sets("recall") ? "" : "recall = false\n");
}

/** What a child deno needs from this process: its module cache and TLS settings, never XDG or HOME. */
export function inheritedEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  for (const name of Object.keys(env)) {
    if (name === "HOME" || name.startsWith("XDG_")) delete env[name];
  }
  // A moved HOME would move deno's cache and make the child download again.
  env.DENO_DIR = Deno.env.get("DENO_DIR") ??
    `${
      Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME")}/.cache`
    }/deno`;
  return env;
}

/** The environment a daemon under test runs in: every XDG dir inside home. */
export function daemonEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    XDG_RUNTIME_DIR: `${home}/run`,
    XDG_DATA_HOME: `${home}/data`,
    XDG_CONFIG_HOME: `${home}/config`,
    XDG_STATE_HOME: `${home}/state`,
    NO_COLOR: "1",
  };
}

/** Whether anything (a symlink included) is at path. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
