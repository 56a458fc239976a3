/** Runs the terminal clients as subprocesses with exactly the client's grants, against a daemon under test. */
import { clientFlags } from "../../src/clients/client.ts";
import { Daemon, inheritedEnv } from "./daemon_harness.ts";

/** The command line entry point. */
export const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** Whether util-linux `script` is here to run a client on a pseudo-terminal. */
export const hasScript = await new Deno.Command("script", {
  args: ["--version"],
  stdout: "null",
  stderr: "null",
}).output().then((out) => out.success, () => false);

/** Appended to the name of a test that needs `script`, when it is skipped. */
export const PTY_SKIP = hasScript
  ? ""
  : " (skipped: util-linux `script` is not installed)";

/** How long any one wait in these tests may take before it fails. */
export const WAIT_MS = 20_000;

/** Deno's module cache as this process sees it, so subprocesses with a cleared environment find the same packages. */
export function denoDir(): string {
  return inheritedEnv().DENO_DIR!;
}

/** A temporary directory, removed on dispose. */
export async function tempHome(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "da-client-" });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

/** Starts the daemon against the (fake) llama-server at `llmUrl`, with no tools unless given. */
export function startDaemon(
  llmUrl: string,
  toolsDirs: string[] = [],
): Promise<Daemon> {
  return Daemon.start({ llmUrl, toolsDirs });
}

/** The environment a client runs in: only what locates the socket, and Deno's cache. */
export function clientEnv(
  runtimeDir: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    XDG_RUNTIME_DIR: runtimeDir,
    DENO_DIR: denoDir(),
    NO_COLOR: "1",
    ...extra,
  };
}

/** `deno run` arguments for a client command with exactly the client's flags. */
export function clientArgs(socket: string, command: string[]): string[] {
  return ["run", "--quiet", ...clientFlags(socket), MAIN, ...command];
}

/** Rejects when `promise` takes longer than `ms`, naming what was awaited. */
export async function within<T>(
  promise: Promise<T>,
  what: string,
  ms = WAIT_MS,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Timed out after ${ms} ms waiting for ${what}`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Removes ANSI escape sequences, for matching what a terminal shows. */
export function stripAnsi(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/\x1b(?:\[[0-9;?]*[ -/]*[@-~]|O.|[@-Z\\-_])/g, "");
}

/** Options of {@link ClientProcess.spawn}. */
export interface SpawnOptions {
  env: Record<string, string>;
  /** Run the command inside a pseudo-terminal (util-linux `script`). */
  pty?: boolean;
  /** The pseudo-terminal's size; default whatever `script` gives it. */
  size?: { columns: number; rows: number };
}

/** A client subprocess with piped stdio; its output accumulates for matching. */
export class ClientProcess implements AsyncDisposable {
  readonly child: Deno.ChildProcess;
  #stdout = "";
  #stderr = "";
  #changed = Promise.withResolvers<void>();
  #readers: Promise<void>;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #status: Promise<Deno.CommandStatus>;

  private constructor(child: Deno.ChildProcess) {
    this.child = child;
    this.#writer = child.stdin.getWriter();
    this.#status = child.status;
    const pump = async (
      stream: ReadableStream<Uint8Array>,
      add: (text: string) => void,
    ) => {
      for await (const text of stream.pipeThrough(new TextDecoderStream())) {
        add(text);
        this.#notify();
      }
    };
    this.#readers = Promise.all([
      pump(child.stdout, (text) => this.#stdout += text),
      pump(child.stderr, (text) => this.#stderr += text),
    ]).then(() => this.#notify());
  }

  /** Starts `deno <args>`, in a pseudo-terminal when asked. */
  static spawn(args: string[], options: SpawnOptions): ClientProcess {
    const command = options.pty ? "script" : Deno.execPath();
    const size = options.size
      ? `stty cols ${options.size.columns} rows ${options.size.rows} && exec `
      : "";
    const argv = options.pty
      ? [
        "-qfec",
        size + [Deno.execPath(), ...args].map(shellQuote).join(" "),
        "/dev/null",
      ]
      : args;
    const child = new Deno.Command(command, {
      args: argv,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        SHELL: "/bin/sh",
        ...options.env,
      },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    return new ClientProcess(child);
  }

  /** Everything written to stdout so far. */
  get stdout(): string {
    return this.#stdout;
  }

  /** Everything written to stderr so far. */
  get stderr(): string {
    return this.#stderr;
  }

  /** Writes text to the process's stdin (the terminal's keyboard under a pty). */
  async type(text: string): Promise<void> {
    await this.#writer.write(new TextEncoder().encode(text));
  }

  /** Closes stdin: end of input (Ctrl-D at a pty's empty prompt). */
  async endInput(): Promise<void> {
    await this.#writer.close().catch(() => {});
  }

  /** Waits until stdout, with escape sequences removed, matches; returns the index just past the match. */
  async waitFor(pattern: string | RegExp, from = 0): Promise<number> {
    const find = (): number => {
      const text = stripAnsi(this.#stdout).slice(from);
      if (typeof pattern === "string") {
        const at = text.indexOf(pattern);
        return at === -1 ? -1 : from + at + pattern.length;
      }
      const match = pattern.exec(text);
      return match ? from + match.index + match[0].length : -1;
    };
    return await within(
      (async () => {
        while (true) {
          const at = find();
          if (at !== -1) return at;
          const changed = this.#changed.promise;
          const ended = await Promise.race([
            changed.then(() => false),
            this.#readers.then(() => true),
          ]);
          if (ended && find() === -1) {
            throw new Error(
              `Output ended without ${pattern}:\n${this.#stdout}\nstderr:\n${this.#stderr}`,
            );
          }
        }
      })(),
      `${pattern} in the output:\n${this.#stdout}\nstderr:\n${this.#stderr}`,
    );
  }

  /** Waits for the exit; resolves to the exit code. */
  async exit(): Promise<number> {
    const status = await within(
      this.#status,
      `the client to exit; output:\n${this.#stdout}\nstderr:\n${this.#stderr}`,
    );
    await this.#readers;
    return status.code;
  }

  #notify(): void {
    const changed = this.#changed;
    this.#changed = Promise.withResolvers<void>();
    changed.resolve();
  }

  /** Kills the process if still running and waits for its pipes. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#writer.close().catch(() => {});
    try {
      this.child.kill("SIGKILL");
    } catch {
      // Exited already.
    }
    await this.#status;
    await this.#readers;
  }
}

/** Runs a client to the end with `input` on stdin; resolves to its code and output. */
export async function runClient(
  args: string[],
  env: Record<string, string>,
  input = "",
): Promise<{ code: number; stdout: string; stderr: string }> {
  await using process = ClientProcess.spawn(args, { env });
  await process.type(input);
  await process.endInput();
  const code = await process.exit();
  return { code, stdout: process.stdout, stderr: process.stderr };
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg)
    ? arg
    : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** A reply's timings line as chat prints it (tokens/s, prompt tokens read and reused), dimmed or not. */
export const TIMINGS_LINE =
  // deno-lint-ignore no-control-regex -- the dim style is an escape sequence
  /^(?:\x1b\[[0-9;]*m)*[\d,]+ tokens\/s · prompt [\d,]+ read, [\d,]+ reused(?:\x1b\[[0-9;]*m)*\r?\n/gm;

/** What chat printed, without its timings lines: for tests that read the rest exactly. */
export function untimed(text: string): string {
  return text.replace(TIMINGS_LINE, "");
}
