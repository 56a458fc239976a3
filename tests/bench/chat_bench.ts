/**
 * The chat client's own cost of drawing Markdown, measured on the real
 * client process inside a pseudo-terminal (util-linux `script`) against the
 * real daemon: its CPU per streamed token with Markdown drawn against
 * `--raw` (/proc/<pid>/stat, all threads), and its start-up to the prompt
 * with the library loaded against NO_COLOR, where it is not.
 */
import { clientFlags } from "../../src/clients/client.ts";
import { Daemon, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { MARKDOWN_REPLY, modelTokens } from "../support/markdown_reply.ts";
import {
  type GroupResult,
  median,
  ms,
  progress,
  ratio,
  within,
} from "./report.ts";

/** Sizes of the chat figures. */
export interface ChatSizes {
  /** Tokens of the streamed answer. */
  tokens: number;
  /** Runs of each mode, interleaved; medians are reported. */
  runs: number;
  /** Starts of each mode, interleaved. */
  starts: number;
}

/** Full and smoke sizes. */
export const CHAT_SIZES: Record<"full" | "smoke", ChatSizes> = {
  full: { tokens: 20_000, runs: 5, starts: 7 },
  smoke: { tokens: 300, runs: 1, starts: 1 },
};

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const END = "That is all.";
const TICKS_PER_SECOND = 100;

/** An answer of about `count` model tokens: the sample answer over and over, then END. */
export function answerTokens(count: number): string[] {
  const one = modelTokens(`${MARKDOWN_REPLY}\n\n`);
  const tokens: string[] = [];
  while (tokens.length + one.length <= count) tokens.push(...one);
  tokens.push(...modelTokens(END));
  return tokens;
}

/** CPU seconds a process has used, all its threads (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** The chat process that `script` runs (its only child, which exec'd deno). */
async function childOf(pid: number): Promise<number> {
  for (;;) {
    const children = await Deno.readTextFile(
      `/proc/${pid}/task/${pid}/children`,
    ).catch(() => "");
    const child = Number(children.trim().split(" ")[0]);
    if (child > 0) {
      const exe = await Deno.readLink(`/proc/${child}/exe`).catch(() => "");
      if (exe === Deno.execPath()) return child;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `chat` on a pseudo-terminal of 100×40, its output read and scanned for marks. */
class PtyChat implements AsyncDisposable {
  readonly child: Deno.ChildProcess;
  #seen = "";
  #waiting: { mark: RegExp; done: () => void } | null = null;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #reading: Promise<void>;

  constructor(daemon: Daemon, args: string[], color: boolean) {
    const command = [
      Deno.execPath(),
      "run",
      "--quiet",
      ...clientFlags(daemon.paths.socketPath),
      MAIN,
      "chat",
      ...args,
    ].map((arg) => `'${arg}'`).join(" ");
    const child = new Deno.Command("script", {
      args: ["-qfec", `stty cols 100 rows 40 && exec ${command}`, "/dev/null"],
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        SHELL: "/bin/sh",
        XDG_RUNTIME_DIR: daemon.paths.runtimeDir,
        DENO_DIR: inheritedEnv().DENO_DIR!,
        ...(color ? {} : { NO_COLOR: "1" }),
      },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    this.child = child;
    this.#writer = child.stdin.getWriter();
    this.#reading = (async () => {
      for await (
        const text of child.stdout.pipeThrough(new TextDecoderStream())
      ) {
        // Only the latest output is scanned: a mark is short.
        this.#seen = (this.#seen + text).slice(-4096);
        if (this.#waiting?.mark.test(this.#seen)) {
          this.#seen = "";
          this.#waiting.done();
          this.#waiting = null;
        }
      }
    })();
  }

  /** Resolves once output ending in `mark` has been seen (after the last wait). */
  waitFor(mark: RegExp, what: string): Promise<void> {
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiting = { mark, done: resolve };
    if (mark.test(this.#seen)) {
      this.#seen = "";
      this.#waiting = null;
      resolve();
    }
    return within(promise, what);
  }

  async type(text: string): Promise<void> {
    await this.#writer.write(new TextEncoder().encode(text));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#writer.close().catch(() => {});
    try {
      this.child.kill("SIGKILL");
    } catch {
      // Exited already.
    }
    await this.child.status;
    await this.#reading.catch(() => {});
  }
}

// The empty prompt line, drawn once the chat is idle, ends so.
// deno-lint-ignore no-control-regex
const PROMPT = /\x1b\[K\r\x1b\[2C$/;
// The answer's last words, then the prompt.
// deno-lint-ignore no-control-regex
const ANSWERED = /all\.[^]*\x1b\[K\r\x1b\[2C$/;

/** CPU microseconds per token of one streamed answer. */
async function cpuPerToken(
  daemon: Daemon,
  args: string[],
  tokens: number,
): Promise<number> {
  await using chat = new PtyChat(daemon, args, true);
  await chat.waitFor(PROMPT, "the prompt");
  const pid = await childOf(chat.child.pid);
  const before = cpuSeconds(pid);
  await chat.type("Go on\r");
  await chat.waitFor(ANSWERED, "the answer");
  const after = cpuSeconds(pid);
  await chat.type("\x04");
  await chat.child.status;
  return (after - before) * 1e6 / tokens;
}

/** Milliseconds from the start of `chat` to its prompt. */
async function startup(daemon: Daemon, color: boolean): Promise<number> {
  const started = performance.now();
  await using chat = new PtyChat(daemon, [], color);
  await chat.waitFor(PROMPT, "the prompt");
  const elapsed = performance.now() - started;
  await chat.type("\x04");
  await chat.child.status;
  return elapsed;
}

/** Runs the chat figures. */
export async function chatBenchmarks(
  sizes: ChatSizes,
  smoke: boolean,
): Promise<GroupResult> {
  const tokens = answerTokens(sizes.tokens);
  // A context that holds the long answers: the figure is drawing, not the budget.
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 1 << 20 }],
    defaultScript: reply({ content: tokens }),
  });
  await using daemon = await Daemon.start({ llmUrl: llm.url });

  // First, while the conversation is empty: a chat draws it when it starts.
  progress(`chat start-up: ${sizes.starts} starts per mode`);
  const loaded: number[] = [];
  const plain: number[] = [];
  for (let run = 0; run < sizes.starts; run++) {
    plain.push(await startup(daemon, false));
    loaded.push(await startup(daemon, true));
  }

  progress(`chat CPU: ${sizes.runs} runs of ${tokens.length} tokens per mode`);
  const drawn: number[] = [];
  const raw: number[] = [];
  for (let run = 0; run < sizes.runs; run++) {
    raw.push(await cpuPerToken(daemon, ["--raw"], tokens.length));
    drawn.push(await cpuPerToken(daemon, [], tokens.length));
  }

  const cpu = median(drawn);
  const cpuRaw = median(raw);
  const start = median(loaded);
  const startPlain = median(plain);
  const us = (value: number) => `${value.toFixed(1)} µs`;
  return {
    rows: [{
      id: "chat.cpu",
      figure: "chat: CPU per streamed token, Markdown drawn",
      value: us(cpu),
      reference: `--raw ${us(cpuRaw)}`,
      ratio: ratio(cpu / cpuRaw),
      target: "≤ 2×",
      met: smoke ? null : cpu / cpuRaw <= 2,
    }, {
      id: "chat.startup",
      figure: "chat: start-up to the prompt, Markdown library loaded",
      value: ms(start),
      reference: `NO_COLOR (not loaded) ${ms(startPlain)}`,
      ratio: ratio(start / startPlain),
      target: "—",
      met: null,
    }],
    sections: [{
      title: "Chat: Markdown drawing",
      body: [
        `One answer of ${tokens.length.toLocaleString("en-US")} model tokens ` +
        "(the sample answer of tests/support/markdown_reply.ts over and over: " +
        "a heading, inline styles, a TypeScript block, a table, a nested list " +
        "and a link), streamed back to back by the fake llama-server through " +
        "the daemon to `chat` on a 100×40 pseudo-terminal. CPU is the client " +
        "process's user and system time from /proc (10 ms ticks), from the " +
        "prompt to the prompt's return, per token; medians of " +
        `${sizes.runs} runs per mode, interleaved. Start-up is spawn to the ` +
        "prompt (with `script` and the daemon's hello of an empty " +
        `conversation), median of ${sizes.starts}.`,
      ].join("\n"),
    }],
  };
}
