/**
 * The benchmark suite: `deno task bench` runs every group, prints the table
 * and writes BENCHMARKS.md; `--smoke` runs the same code at tiny sizes in
 * seconds (and writes its report to a temp file unless `--out` is given).
 *
 *   deno task bench [--smoke] [--turns N] [--large N] [--seed N]
 *                   [--only group,…] [--out FILE] [--json FILE]
 *
 * `--turns` is the history size of the daemon-level search figure and the
 * first history rows (default 100,000); `--large` the second history rows
 * (default 1,000,000; 0 skips them). Generated files are cached in the temp
 * dir, keyed by seed and size. Benchmarks never fail on a number: the exit
 * code is 0 whenever every figure was measured.
 */
import { BACKEND_SIZES, backendBenchmarks } from "./backend_bench.ts";
import { HISTORY_SIZES, historyBenchmarks } from "./history_bench.ts";
import { catalogBenchmarks } from "./catalog_bench.ts";
import { CHAT_SIZES, chatBenchmarks } from "./chat_bench.ts";
import { CONTEXT_SIZES, contextBenchmarks } from "./context_bench.ts";
import { contentionBenchmarks } from "./contention_bench.ts";
import { PROCESS_SIZES, processBenchmarks } from "./process_bench.ts";
import { FOOTPRINT_SIZES, footprintBenchmarks } from "./footprint_bench.ts";
import {
  type GroupResult,
  machine,
  markdownReport,
  out,
  progress,
  type Row,
  type Section,
  textTable,
} from "./report.ts";
import { STREAM_SIZES, streamBenchmarks } from "./stream_bench.ts";
import { WEB_SIZES, webBenchmarks } from "./web_bench.ts";
import { VOICE_SIZES, voiceBenchmarks } from "./voice_bench.ts";
import { PROMPT_SIZES, promptBenchmarks } from "./prompt_bench.ts";
import { filesBenchmarks } from "./files_bench.ts";
import { MEMORIES_SIZES, memoriesBenchmarks } from "./memory_bench.ts";
import { meaningBenchmarks } from "./meaning_bench.ts";
import { vectorBenchmarks } from "./vector_bench.ts";

/** The groups, in run order. */
export const GROUPS = [
  "stream",
  "history",
  "contention",
  "catalog",
  "process",
  "footprint",
  "backend",
  "chat",
  "web",
  "context",
  "prompt",
  "voice",
  "files",
  "memory",
  "meaning",
  "vectors",
] as const;

/** One group's name. */
export type Group = typeof GROUPS[number];

/** Parsed command line. */
export interface BenchOptions {
  smoke: boolean;
  turns: number;
  large: number;
  seed: number;
  only: Group[];
  out: string | null;
  json: string | null;
}

/** Parses the command line; throws a TypeError naming a bad flag. */
export function parseArgs(args: string[]): BenchOptions {
  const options: BenchOptions = {
    smoke: false,
    turns: 100_000,
    large: 1_000_000,
    seed: 1,
    only: [...GROUPS],
    out: null,
    json: null,
  };
  let turnsGiven = false;
  let largeGiven = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const value = () => {
      const next = args[++i];
      if (next === undefined) {
        throw new TypeError(
          `Flag ${arg} needs a value; see tests/bench/bench.ts.`,
        );
      }
      return next;
    };
    const number = () => {
      const text = value();
      const n = Number(text.replaceAll("_", ""));
      if (!Number.isSafeInteger(n) || n < 0) {
        throw new TypeError(
          `Flag ${arg} takes a non-negative integer, not ${
            JSON.stringify(text)
          }.`,
        );
      }
      return n;
    };
    switch (arg) {
      case "--smoke":
        options.smoke = true;
        break;
      case "--turns":
        options.turns = number();
        turnsGiven = true;
        break;
      case "--large":
        options.large = number();
        largeGiven = true;
        break;
      case "--seed":
        options.seed = number();
        break;
      case "--only": {
        const names = value().split(",");
        for (const name of names) {
          if (!(GROUPS as readonly string[]).includes(name)) {
            throw new TypeError(
              `Unknown group ${JSON.stringify(name)}; choose from ${
                GROUPS.join(", ")
              }.`,
            );
          }
        }
        options.only = names as Group[];
        break;
      }
      case "--out":
        options.out = value();
        break;
      case "--json":
        options.json = value();
        break;
      default:
        throw new TypeError(
          `Unknown flag ${
            JSON.stringify(arg)
          }; see tests/bench/bench.ts for the flags.`,
        );
    }
  }
  if (options.smoke) {
    if (!turnsGiven) options.turns = HISTORY_SIZES.smoke.turns;
    if (!largeGiven) options.large = HISTORY_SIZES.smoke.large;
  }
  if (options.turns < 1) {
    throw new TypeError("Flag --turns must be at least 1.");
  }
  return options;
}

/** Runs the selected groups; resolves to every row and section. */
export async function runBench(
  options: BenchOptions,
): Promise<GroupResult & { failed: Group[] }> {
  const mode = options.smoke ? "smoke" : "full";
  const rows: Row[] = [];
  const sections: Section[] = [];
  // A smoke run generates its tiny files afresh in a temp dir it removes.
  const cache = options.smoke
    ? await Deno.makeTempDir({ prefix: "da-bench-" })
    : null;
  const history = {
    seed: options.seed,
    turns: options.turns,
    large: options.large,
    ...(cache === null ? {} : { cacheDir: cache }),
  };
  let worst: string[] = [];
  const failed: Group[] = [];
  const runGroup = async (group: Group): Promise<GroupResult> => {
    switch (group) {
      case "stream":
        return await streamBenchmarks(STREAM_SIZES[mode], options.smoke);
      case "history": {
        const found = await historyBenchmarks(
          { ...history, mode },
          options.smoke,
        );
        worst = found.worst;
        return found;
      }
      case "contention":
        return await contentionBenchmarks(
          { ...history, mode, worst },
          options.smoke,
        );
      case "catalog":
        return await catalogBenchmarks({ ...history, mode }, options.smoke);
      case "process":
        return await processBenchmarks(PROCESS_SIZES[mode], options.smoke);
      case "footprint":
        return await footprintBenchmarks(FOOTPRINT_SIZES[mode], options.smoke);
      case "backend":
        return await backendBenchmarks(BACKEND_SIZES[mode], options.smoke);
      case "chat":
        return await chatBenchmarks(CHAT_SIZES[mode], options.smoke);
      case "web":
        return await webBenchmarks(WEB_SIZES[mode], options.smoke);
      case "context":
        return await contextBenchmarks(CONTEXT_SIZES[mode], options.smoke);
      case "prompt":
        return await promptBenchmarks(PROMPT_SIZES[mode], options.smoke);
      case "voice":
        return await voiceBenchmarks(VOICE_SIZES[mode], options.smoke);
      case "files":
        return await filesBenchmarks({ ...history, mode }, options.smoke);
      case "memory":
        return await memoriesBenchmarks(MEMORIES_SIZES[mode], options.smoke);
      case "meaning":
        return await meaningBenchmarks(
          { ...history, mode },
          options.smoke,
        );
      case "vectors":
        return await vectorBenchmarks({ ...history, mode }, options.smoke);
    }
  };
  try {
    for (const group of GROUPS) {
      if (!options.only.includes(group)) continue;
      progress(`group ${group}`);
      let result: GroupResult;
      try {
        result = await runGroup(group);
      } catch (error) {
        // One broken group must not hide the others' figures; the run still fails.
        failed.push(group);
        const message = error instanceof Error ? error.message : String(error);
        progress(`group ${group} failed: ${message}`);
        result = {
          rows: [{
            id: `${group}.failed`,
            figure: `group ${group}`,
            value: `FAILED: ${message.split("\n")[0]}`,
            reference: "—",
            ratio: "—",
            target: "—",
            met: null,
          }],
          sections: [],
        };
      }
      rows.push(...result.rows);
      sections.push(...result.sections);
    }
  } finally {
    if (cache !== null) await Deno.remove(cache, { recursive: true });
  }
  return { rows, sections, failed };
}

const NOTES = new URL("./NOTES.md", import.meta.url);
const DEFAULT_OUT = new URL("../../BENCHMARKS.md", import.meta.url).pathname;

async function main(args: string[]): Promise<number> {
  const options = parseArgs(args);
  const started = performance.now();
  const host = machine();
  const { rows, sections, failed } = await runBench(options);
  const seconds = (performance.now() - started) / 1000;
  out("\n" + textTable(rows));
  let notes = "";
  try {
    notes = await Deno.readTextFile(NOTES);
  } catch {
    // No hand-written notes: the report is the measurements alone.
  }
  const target = options.out ??
    (options.smoke
      ? `${await Deno.makeTempDir({
        prefix: "da-bench-report-",
      })}/BENCHMARKS.md`
      : DEFAULT_OUT);
  await Deno.writeTextFile(
    target,
    markdownReport({
      machine: host,
      command: ["deno task bench", ...args].join(" "),
      smoke: options.smoke,
      seconds,
      rows,
      sections,
      notes: options.smoke ? "" : notes,
    }),
  );
  if (options.json !== null) {
    await Deno.writeTextFile(options.json, JSON.stringify(rows, null, 2));
  }
  out(`\nwrote ${target} (${(seconds / 60).toFixed(1)} min)\n`);
  if (failed.length > 0) {
    progress(`failed groups: ${failed.join(", ")}`);
    return 1;
  }
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
