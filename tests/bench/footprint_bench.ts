/**
 * What stays resident: the process trees of `deno task start` (idle) and
 * `deno task chat` (connected, at its prompt), and the daemon's memory a
 * while after a burst of hostile lines.
 */
import { Daemon, daemonEnv, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { SocketClient } from "../support/socket_client.ts";
import { argvOf, descendants } from "../support/process_tree.ts";
import { answerTo, generate } from "../reliability/fuzz_test.ts";
import { type GroupResult, mb, progress, ratio, within } from "./report.ts";
import { rss } from "./process_bench.ts";

/** Sizes of the footprint figures. */
export interface FootprintSizes {
  /** Fuzzed lines sent in one burst. */
  lines: number;
  /** How long the daemon rests after them before its RSS is read, in ms. */
  restMs: number;
}

/** Full and smoke sizes. */
export const FOOTPRINT_SIZES: Record<"full" | "smoke", FootprintSizes> = {
  full: { lines: 10_000, restMs: 60_000 },
  smoke: { lines: 300, restMs: 500 },
};

const ROOT = new URL("../../", import.meta.url).pathname;

/** Resident memory of a process tree: the sum of RSS, and with pages shared among its processes (the deno binary) counted once. */
export interface TreeMemory {
  processes: { pid: number; rss: number; name: string }[];
  /** Sum of each process's RSS (VmRSS), as `ps` shows them. */
  rss: number;
  /** Private pages of each, plus the largest shared set once. */
  sharedOnce: number;
}

function rollup(pid: number, field: string): number {
  const text = Deno.readTextFileSync(`/proc/${pid}/smaps_rollup`);
  const kb = Number(
    text.match(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m"))?.[1],
  );
  return kb * 1024;
}

/** The memory of `root` and every process below it. */
export function treeMemory(root: number): TreeMemory {
  const pids = [root, ...descendants(root)];
  let total = 0;
  let own = 0;
  let shared = 0;
  const processes = pids.map((pid) => {
    const bytes = rss(pid);
    total += bytes;
    own += rollup(pid, "Private_Clean") + rollup(pid, "Private_Dirty");
    shared = Math.max(
      shared,
      rollup(pid, "Shared_Clean") + rollup(pid, "Shared_Dirty"),
    );
    const argv = argvOf(pid);
    const name = argv.slice(1, 3).join(" ") || argv[0] || String(pid);
    return { pid, rss: bytes, name };
  });
  return { processes, rss: total, sharedOnce: own + shared };
}

/** A temporary home with a config pointing at `llmUrl`, and the env of a user there. */
async function tempHome(llmUrl: string) {
  const home = await Deno.makeTempDir({ prefix: "da-bench-home-" });
  const env = { ...inheritedEnv(), ...daemonEnv(home) };
  await Deno.mkdir(env.XDG_RUNTIME_DIR!, { recursive: true, mode: 0o700 });
  const configDir = `${env.XDG_CONFIG_HOME}/desktop-assistant`;
  await Deno.mkdir(configDir, { recursive: true });
  await Deno.writeTextFile(
    `${configDir}/config.toml`,
    `llm_url = ${JSON.stringify(llmUrl)}\ntools_dirs = []\n`,
  );
  return {
    env,
    socket: `${env.XDG_RUNTIME_DIR}/desktop-assistant.sock`,
    [Symbol.asyncDispose]: () => Deno.remove(home, { recursive: true }),
  };
}

/** Resolves once something accepts on the socket. */
async function accepting(path: string): Promise<void> {
  for (;;) {
    try {
      (await Deno.connect({ transport: "unix", path })).close();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** `deno task <name>` at the project root, in `env`. */
function task(
  name: string,
  env: Record<string, string>,
  stdin: "null" | "piped",
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", name],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin,
    stdout: "piped",
    stderr: "null",
  }).spawn();
}

async function ended(child: Deno.ChildProcess): Promise<void> {
  try {
    child.kill("SIGTERM");
  } catch {
    // Gone already.
  }
  await child.status;
}

/** The trees of `deno task start` and `deno task chat`. */
async function taskTrees(llmUrl: string) {
  await using home = await tempHome(llmUrl);
  const start = task("start", home.env, "null");
  start.stdout.cancel();
  try {
    await within(accepting(home.socket), "deno task start to listen");
    {
      // A ping round trip: the daemon is up and has answered once.
      await using probe = await SocketClient.connect(home.socket);
      await probe.next("hello");
      await probe.send({ type: "ping" });
      await probe.next("pong");
    }
    const daemon = treeMemory(start.pid);
    const chat = task("chat", home.env, "piped");
    try {
      const reader = chat.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      let shown = "";
      await within(
        (async () => {
          while (!shown.includes("/help for commands")) {
            const next = await reader.read();
            if (next.done) throw new Error(`chat ended: ${shown}`);
            shown += next.value;
          }
        })(),
        "deno task chat to greet",
      );
      const client = treeMemory(chat.pid);
      await chat.stdin.close();
      await reader.cancel();
      return { daemon, client };
    } finally {
      await ended(chat);
    }
  } finally {
    await ended(start);
  }
}

/** The daemon's RSS before, right after and `restMs` after `lines` fuzzed lines. */
async function fuzzRest(llmUrl: string, sizes: FootprintSizes) {
  await using daemon = await Daemon.start({ llmUrl });
  await using client = await SocketClient.connect(daemon.paths.socketPath, {
    timeoutMs: 300_000,
  });
  await client.next("hello");
  // A little history for the lines to open, list and search.
  for (const question of ["Where is the lighthouse", "Città vecchia"]) {
    await client.send({ type: "ask", text: question });
    await client.until((e) => e.type === "state" && e.state === "idle");
    await client.send({ type: "new" });
    await client.next("conversation");
  }
  const existing = new Set([1, 2]);
  const pid = daemon.child.pid;
  const before = rss(pid);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const flush = async () => {
    const all = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      all.set(chunk, at);
      at += chunk.length;
    }
    chunks.length = 0;
    size = 0;
    await client.sendRaw(all);
  };
  for (let sent = 0; sent < sizes.lines;) {
    const line = generate();
    if (answerTo(line, existing).kind === "reject") continue;
    sent++;
    chunks.push(line, new Uint8Array([0x0a]));
    size += line.length + 1;
    if (size > 256 * 1024) await flush();
  }
  await flush();
  // A line no generator makes: its answer comes after every other one.
  await client.send({ type: "footprint-end" });
  await client.until((e) =>
    e.type === "error" && e.message === "unknown command footprint-end"
  );
  const after = rss(pid);
  await new Promise((resolve) => setTimeout(resolve, sizes.restMs));
  const rested = rss(pid);
  // Still serving.
  await client.send({ type: "ping" });
  await client.next("pong");
  return { before, after, rested };
}

function describe(tree: TreeMemory): string {
  return tree.processes.map((p) => `${p.name} ${mb(p.rss)}`).join(" + ");
}

/** Runs the footprint figures. */
export async function footprintBenchmarks(
  sizes: FootprintSizes,
  smoke: boolean,
): Promise<GroupResult> {
  await using llm = await FakeLlm.start({
    defaultScript: reply({ content: ["By the ", "harbour."] }),
  });
  progress("footprint: deno task start and deno task chat");
  const { daemon, client } = await taskTrees(llm.url);
  progress(
    `footprint: ${sizes.lines} fuzzed lines, then ${
      sizes.restMs / 1000
    } s of rest`,
  );
  const fuzz = await fuzzRest(llm.url, sizes);
  const growth = fuzz.rested - fuzz.before;
  const seconds = sizes.restMs / 1000;
  return {
    rows: [{
      id: "tasks.start",
      figure: "RSS of the process tree of `deno task start`, idle",
      value: `${mb(daemon.rss)} (${daemon.processes.length} processes)`,
      reference: `shared pages once: ${mb(daemon.sharedOnce)}`,
      ratio: "—",
      target: "≤ 90 MB",
      met: smoke ? null : daemon.rss <= 90e6,
    }, {
      id: "tasks.chat",
      figure: "RSS of the process tree of `deno task chat`, at its prompt",
      value: `${mb(client.rss)} (${client.processes.length} processes)`,
      reference: `shared pages once: ${mb(client.sharedOnce)}`,
      ratio: "—",
      target: "≤ 60 MB",
      met: smoke ? null : client.rss <= 60e6,
    }, {
      id: "memory.fuzz",
      figure: `memory: RSS ${seconds} s after ${
        sizes.lines.toLocaleString("en-US")
      } fuzzed lines`,
      value: `${mb(fuzz.rested)} (${growth >= 0 ? "+" : ""}${mb(growth)})`,
      reference: `before ${mb(fuzz.before)}, right after ${mb(fuzz.after)}`,
      ratio: ratio(fuzz.rested / fuzz.before),
      target: "within 30 MB of before",
      met: smoke ? null : Math.abs(growth) <= 30e6,
    }],
    sections: [{
      title: "What stays resident",
      body: [
        `\`deno task start\`: ${describe(daemon)}. \`deno task chat\`: ${
          describe(client)
        }.`,
        "Each process's RSS counts the pages of the deno binary it has touched, " +
        "and `deno task` shares them with its child; “shared pages once” adds " +
        "each process's private pages and the largest shared set a single time.",
      ].join("\n"),
    }],
  };
}
