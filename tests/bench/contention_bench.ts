/**
 * Token latency while searches run: the daemon starts on a copy of a
 * generated history, streams at 200 tokens/s to 8 clients, once alone (the
 * reference) and once while a ninth client runs the worst searches back to
 * back. A search must never stall the stream.
 */
import { resolvePaths } from "../../src/base/paths.ts";
import { Daemon, daemonEnv } from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { BenchClient } from "./bench_client.ts";
import { copyHistory } from "./history_gen.ts";
import { historyFile } from "./history_bench.ts";
import {
  count,
  type GroupResult,
  max,
  ms,
  percentile,
  progress,
  ratio,
  showSpread,
  spread,
} from "./report.ts";
import { pacedLatency, STREAM_SIZES } from "./stream_bench.ts";

/** What the contention figure needs. */
export interface ContentionOptions {
  seed: number;
  turns: number;
  cacheDir?: string;
  mode: "full" | "smoke";
  /** The slowest queries found by the history group; a fixed worst set when empty. */
  worst: string[];
}

const LOAD = new URL("./search_load.ts", import.meta.url).pathname;

/** The usual worst queries: a common word, a one-letter prefix, a phrase of common words. */
const DEFAULT_WORST = ["s", "the", "one of the"];

/** Lays a copy of the generated history where the daemon under `home` looks for it. */
export async function layHistory(source: string): Promise<string> {
  const home = await Deno.makeTempDir({ prefix: "da-bench-" });
  const env = daemonEnv(home);
  const paths = resolvePaths((name) => env[name]);
  const dir = paths.dbPath.slice(0, paths.dbPath.lastIndexOf("/"));
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  copyHistory(source, paths.dbPath);
  return home;
}

/** Runs the figure; the daemon and the copy are removed afterwards. */
export async function contentionBenchmarks(
  options: ContentionOptions,
  smoke: boolean,
): Promise<GroupResult> {
  const tokens = STREAM_SIZES[options.mode].pacedTokens;
  const file = historyFile(options);
  const home = await layHistory(file.path);
  const queries = options.worst.length > 0 ? options.worst : DEFAULT_WORST;
  let searches = 0;
  const searchTimes: number[] = [];
  const alone: number[][] = [];
  const during: number[][] = [];
  const outside: number[][] = [];
  let outsideSearches = 0;
  const runs = STREAM_SIZES[options.mode].pacedRuns;
  try {
    await using llm = await FakeLlm.start();
    await using daemon = await Daemon.start({ llmUrl: llm.url, home });
    await using searcher = await BenchClient.connect(daemon.paths.socketPath);
    await searcher.wait((event) => event.type === "hello");
    // The three cases interleaved, run after run, so they share the noise.
    for (let run = 0; run < runs; run++) {
      progress(
        `contention: ${tokens} tokens at 200/s to 8 clients, run ${
          run + 1
        } of ${runs}: alone, searching, another process searching`,
      );
      alone.push(await pacedLatency(daemon, llm, tokens, 8));

      const stop = new AbortController();
      const loop = (async () => {
        for (let i = 0; !stop.signal.aborted; i++) {
          const answer = searcher.wait((event) =>
            event.type === "results" || event.type === "error"
          );
          const started = await searcher.send({
            type: "search",
            q: queries[i % queries.length],
            limit: 50,
          });
          const { at } = await answer;
          searchTimes.push(at - started);
          searches++;
        }
      })();
      during.push(await pacedLatency(daemon, llm, tokens, 8));
      stop.abort();
      await loop;

      // The same searches from another process: what the two cores alone
      // cost the stream, without the daemon's process doing the search.
      const load = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "--allow-read",
          "--allow-write",
          LOAD,
          daemon.paths.dbPath,
          String(Math.ceil(tokens / 200) + 1),
          ...queries,
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      outside.push(await pacedLatency(daemon, llm, tokens, 8));
      const output = await load.output();
      outsideSearches += Number(
        new TextDecoder().decode(output.stdout).trim(),
      );
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
  const a = spread(alone);
  const d = spread(during);
  const o = spread(outside);
  return {
    rows: [{
      id: "latency.search",
      figure:
        `token latency p99, 200 tokens/s, 8 clients, a 9th client searching back to back (${
          count(file.turns)
        } turns, median of ${runs} runs)`,
      value: `${ms(d.p99)} (max ${ms(d.max)})`,
      reference: `no search: p99 ${ms(a.p99)} (max ${
        ms(a.max)
      }); the searches in another process: p99 ${ms(o.p99)}`,
      ratio: ratio(d.p99 / a.p99),
      target: "≤ 5 ms",
      met: smoke ? null : d.p99 <= 5,
    }],
    sections: [{
      title: "Token latency under search",
      body:
        `${searches} searches ran through the daemon during ${runs} × ${tokens}-token streams (queries ${
          queries.map((q) => `\`${q}\``).join(", ")
        }, the slowest of the mix; socket round trip p50 ${
          ms(percentile(searchTimes, 50))
        }, max ${
          ms(max(searchTimes))
        }). Latency is a client's read time minus the fake server's stamp on the chunk, over all 8 clients, ` +
        `p50 / p99 / max as medians over the runs: alone ${
          showSpread(a)
        }; while a 9th client searched through the daemon ${
          showSpread(d)
        }; while a separate process ran the same searches back to back on the same file (${outsideSearches} searches) ${
          showSpread(o)
        }.`,
    }],
  };
}
