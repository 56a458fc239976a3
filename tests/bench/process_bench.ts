/**
 * The daemon as a process: start-up (process start → socket accepting,
 * beside `deno run` of an empty script) and memory (idle RSS, RSS after
 * 2,000 turns with 16 clients connected, and its growth from the 200th turn
 * on, past the warm-up: a leak shows there).
 */
import { Daemon, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { BenchClient } from "./bench_client.ts";
import {
  type GroupResult,
  max,
  mb,
  median,
  ms,
  progress,
  ratio,
} from "./report.ts";

/** Repeats and sizes of the process figures. */
export interface ProcessSizes {
  starts: number;
  turns: number;
  clients: number;
  /** A `new` every this many turns, as conversations end. */
  turnsPerConversation: number;
  /** The turn whose RSS the leak figure starts from: the warm-up is over. */
  leakFrom: number;
}

/** Full and smoke sizes. */
export const PROCESS_SIZES: Record<"full" | "smoke", ProcessSizes> = {
  full: {
    starts: 7,
    turns: 2000,
    clients: 16,
    turnsPerConversation: 50,
    leakFrom: 200,
  },
  smoke: {
    starts: 2,
    turns: 20,
    clients: 16,
    turnsPerConversation: 10,
    leakFrom: 5,
  },
};

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** Resident set size of a process, in bytes, from /proc. */
export function rss(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = Number(status.match(/^VmRSS:\s+(\d+) kB$/m)?.[1] ?? NaN);
  return kb * 1024;
}

async function connectWhenAccepting(path: string): Promise<number> {
  for (;;) {
    try {
      const conn = await Deno.connect({ transport: "unix", path });
      const at = performance.now();
      conn.close();
      return at;
    } catch {
      // Not listening yet: try again in a millisecond.
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }
}

/** One start of the daemon with the same flags and env as `daemon`; ms to accepting. */
async function startOnce(daemon: Daemon): Promise<number> {
  const path = daemon.paths.socketPath;
  await Deno.remove(path).catch(() => {});
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...daemon.flags, MAIN, "serve"],
    env: { ...inheritedEnv(), ...daemon.env },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    return (await connectWhenAccepting(path)) - started;
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

async function emptyRun(script: string): Promise<number> {
  const started = performance.now();
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", script],
    env: inheritedEnv(),
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  if (!status.success) throw new Error("deno run of an empty script failed");
  return performance.now() - started;
}

/** Runs the start-up and memory figures. */
export async function processBenchmarks(
  sizes: ProcessSizes,
  smoke: boolean,
): Promise<GroupResult> {
  const tokens = Array.from(
    { length: 60 },
    (_, i) => (i % 2 ? " word" : " the"),
  );
  await using llm = await FakeLlm.start({
    defaultScript: reply({ content: tokens }),
  });

  // Start-up, interleaved with the reference so both see the same noise.
  progress(`start-up: ${sizes.starts} starts`);
  const empty = await Deno.makeTempFile({ prefix: "da-bench-", suffix: ".ts" });
  const starts: number[] = [];
  const references: number[] = [];
  try {
    await using laid = await Daemon.start({ llmUrl: llm.url });
    await laid.stop("SIGTERM");
    for (let i = 0; i < sizes.starts; i++) {
      references.push(await emptyRun(empty));
      starts.push(await startOnce(laid));
    }
  } finally {
    await Deno.remove(empty);
  }

  // Memory.
  progress(`memory: ${sizes.turns} turns to ${sizes.clients} clients`);
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  const pid = daemon.child.pid;
  const clients: BenchClient[] = [];
  let idle: number;
  const marks: [number, number][] = [];
  let after: number;
  let leakStart = NaN;
  try {
    {
      // A ping round trip: the daemon is idle and has answered once.
      await using probe = await BenchClient.connect(daemon.paths.socketPath);
      const pong = probe.wait((event) => event.type === "pong");
      await probe.send({ type: "ping" });
      await pong;
    }
    idle = rss(pid);
    for (let i = 0; i < sizes.clients; i++) {
      const client = await BenchClient.connect(daemon.paths.socketPath);
      const hello = client.wait((event) => event.type === "hello");
      clients.push(client);
      await hello;
    }
    const asker = clients[0]!;
    for (let turn = 0; turn < sizes.turns; turn++) {
      if (turn > 0 && turn % sizes.turnsPerConversation === 0) {
        const fresh = asker.wait((event) => event.type === "conversation");
        await asker.send({ type: "new" });
        await fresh;
      }
      const done = Promise.all(
        clients.map((client) => client.wait((event) => event.type === "done")),
      );
      await asker.send({ type: "ask", text: `Question number ${turn}?` });
      await done;
      if (turn + 1 === sizes.leakFrom) leakStart = rss(pid);
      if ((turn + 1) % Math.max(1, Math.floor(sizes.turns / 8)) === 0) {
        marks.push([turn + 1, rss(pid)]);
      }
    }
    after = rss(pid);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
  const startup = median(starts);
  const reference = median(references);
  const growth = after - idle;
  const leak = after - leakStart;
  return {
    rows: [{
      id: "startup",
      figure: "start-up: process start → socket accepting",
      value: `${ms(startup)} (max ${ms(max(starts))})`,
      reference: `deno run of an empty script ${ms(reference)}`,
      ratio: ratio(startup / reference),
      target: "≤ 2×",
      met: smoke ? null : startup / reference <= 2,
    }, {
      id: "memory.idle",
      figure: "memory: idle RSS",
      value: mb(idle),
      reference: "—",
      ratio: "—",
      target: "≤ 80 MB",
      met: smoke ? null : idle <= 80e6,
    }, {
      id: "memory.growth",
      figure: `memory: RSS after ${
        sizes.turns.toLocaleString("en-US")
      } turns, ${sizes.clients} clients connected`,
      value: `${mb(after)} (growth ${mb(growth)})`,
      reference: `idle ${mb(idle)}`,
      ratio: ratio(after / idle),
      target: "growth ≤ 10 MB",
      met: smoke ? null : growth <= 10e6,
    }, {
      id: "memory.leak",
      figure: `memory: RSS growth from the ${sizes.leakFrom}th to the ${
        sizes.turns.toLocaleString("en-US")
      }th turn`,
      value: mb(leak),
      reference: `at turn ${sizes.leakFrom} ${mb(leakStart)}`,
      ratio: ratio(after / leakStart),
      target: "≤ 5 MB",
      met: smoke ? null : leak <= 5e6,
    }],
    sections: [{
      title: "Memory over the turns",
      body: [
        `RSS of the daemon (VmRSS), idle ${
          mb(idle)
        }, then ${sizes.clients} clients connected; ` +
        `each turn streams ${tokens.length} tokens to every client, a \`new\` every ${sizes.turnsPerConversation} turns.\n`,
        "| turns | RSS |",
        "| --- | --- |",
        ...marks.map(([turns, bytes]) => `| ${turns} | ${mb(bytes)} |`),
      ].join("\n"),
    }],
  };
}
