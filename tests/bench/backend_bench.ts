/**
 * What watching llama-server costs: the daemon's CPU while idle with one
 * client connected and `backend_poll` on, beside a daemon with polling off,
 * both running over the same window (so both see the same noise).
 */
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { BenchClient } from "./bench_client.ts";
import { type GroupResult, progress, ratio, within } from "./report.ts";

/** The window and the poll period. */
export interface BackendSizes {
  /** Seconds of idle measured. */
  seconds: number;
  /** `backend_poll` of the polling daemon, in seconds. */
  poll: number;
  /** Seconds to wait after connecting, so start-up work is over. */
  settle: number;
}

/** Full and smoke sizes. */
export const BACKEND_SIZES: Record<"full" | "smoke", BackendSizes> = {
  full: { seconds: 60, poll: 5, settle: 5 },
  smoke: { seconds: 2, poll: 0.5, settle: 0.5 },
};

/** Nanoseconds on CPU of every thread of a process, from /proc (schedstat). */
export function cpuNs(pid: number): number {
  let total = 0;
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const stat = Deno.readTextFileSync(
        `/proc/${pid}/task/${task.name}/schedstat`,
      );
      total += Number(stat.split(" ")[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return total;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface Watched extends AsyncDisposable {
  llm: FakeLlm;
  daemon: Daemon;
}

/** A fake llama-server and a daemon against it with one client connected. */
async function idleDaemon(
  poll: number,
): Promise<Watched & { client: BenchClient }> {
  const llm = await FakeLlm.start();
  const daemon = await Daemon.start({
    llmUrl: llm.url,
    config: `backend_poll = ${poll}\n`,
  });
  const client = await BenchClient.connect(daemon.paths.socketPath);
  await within(
    client.wait((event) => event.type === "hello"),
    "the daemon's hello",
  );
  return {
    llm,
    daemon,
    client,
    async [Symbol.asyncDispose]() {
      await client.close();
      await daemon[Symbol.asyncDispose]();
      await llm[Symbol.asyncDispose]();
    },
  };
}

const probes = (llm: FakeLlm) =>
  llm.requests.filter((r) => r.path === "/health").length;
const requests = (llm: FakeLlm) => llm.requests.length;

/** Runs the idle-CPU figure. */
export async function backendBenchmarks(
  sizes: BackendSizes,
  smoke: boolean,
): Promise<GroupResult> {
  progress(
    `backend: idle CPU over ${sizes.seconds} s, backend_poll = ${sizes.poll} beside 0`,
  );
  await using polling = await idleDaemon(sizes.poll);
  await using quiet = await idleDaemon(0);
  await sleep(sizes.settle * 1000);
  const pids = [polling.daemon.child.pid, quiet.daemon.child.pid] as const;
  const before = pids.map(cpuNs);
  const probesBefore = probes(polling.llm);
  const requestsBefore = [polling.llm, quiet.llm].map(requests);
  const started = performance.now();
  await sleep(sizes.seconds * 1000);
  const elapsedNs = (performance.now() - started) * 1e6;
  const [on, off] = pids.map((pid, i) => cpuNs(pid) - before[i]!) as [
    number,
    number,
  ];
  const polled = probes(polling.llm) - probesBefore;
  const [asked, askedQuiet] = [polling.llm, quiet.llm].map((llm, i) =>
    requests(llm) - requestsBefore[i]!
  );
  const share = (ns: number) => (ns / elapsedNs) * 100;
  const percent = (ns: number) => `${share(ns).toFixed(3)} % of a core`;
  const perProbe = polled > 0 ? (on - off) / polled / 1e6 : NaN;
  return {
    rows: [{
      id: "backend.idle_cpu",
      figure:
        `idle CPU, 1 client connected, backend_poll = ${sizes.poll}, over ${sizes.seconds} s`,
      value: `${percent(on)} (${polled} probes)`,
      reference: `polling off: ${percent(off)}`,
      ratio: ratio(on / off),
      target: "< 0.1 % of a core",
      met: smoke ? null : share(on) < 0.1,
    }],
    sections: [{
      title: "Watching llama-server",
      body: [
        `Two daemons side by side over the same ${sizes.seconds} s, each idle with one client connected: ` +
        `one polling llama-server every ${sizes.poll} s (\`GET /health\`; the model list only when the state changes), one with \`backend_poll = 0\`. ` +
        "CPU is the sum of every thread's time on a CPU (`/proc/<pid>/task/*/schedstat`).\n",
        "| daemon | CPU | probes | requests to llama-server |",
        "| --- | --- | --- | --- |",
        `| backend_poll = ${sizes.poll} | ${(on / 1e6).toFixed(1)} ms (${
          percent(on)
        }) | ${polled} | ${asked} |`,
        `| backend_poll = 0 | ${(off / 1e6).toFixed(1)} ms (${
          percent(off)
        }) | 0 | ${askedQuiet} |`,
        "",
        Number.isFinite(perProbe)
          ? `About ${perProbe.toFixed(2)} ms of CPU per probe.`
          : "No probe ran in the window.",
      ].join("\n"),
    }],
  };
}
