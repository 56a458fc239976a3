/**
 * Rows of the benchmark table, the statistics behind them, and the two ways
 * they are shown: a plain table on stdout and BENCHMARKS.md.
 */
import { DatabaseSync } from "node:sqlite";

/** One figure of the table, with its reference from the same run. */
export interface Row {
  /** Stable key, e.g. `relay.16`; the smoke test checks that each is produced. */
  id: string;
  figure: string;
  value: string;
  /** The reference measured in the same run, or "—". */
  reference: string;
  /** value / reference (or what the target compares), or "—". */
  ratio: string;
  target: string;
  /** Whether the target is met; null when the run is too small to say (smoke). */
  met: boolean | null;
}

/** A titled block of detail under the table (markdown). */
export interface Section {
  title: string;
  body: string;
}

/** What one benchmark group hands back. */
export interface GroupResult {
  rows: Row[];
  sections: Section[];
}

/** Milliseconds any one awaited step of a benchmark may take before the run fails. */
const STEP_LIMIT_MS = 120_000;

/** Resolves like `promise`, or rejects naming `what` when it takes unreasonably long. */
export async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `Benchmark step timed out after ${STEP_LIMIT_MS} ms waiting for ${what}`,
          ),
        ),
      STEP_LIMIT_MS,
    );
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The median of the values (0 for none). */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** The p-th percentile (nearest rank) of the values (0 for none). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** Latency of several runs: medians of each run's p50 and p99, and the largest value of all. */
export interface Spread {
  p50: number;
  p99: number;
  max: number;
}

/** Summarises repeated runs, each a list of samples, as medians over the runs. */
export function spread(runs: readonly (readonly number[])[]): Spread {
  return {
    p50: median(runs.map((run) => percentile(run, 50))),
    p99: median(runs.map((run) => percentile(run, 99))),
    max: max(runs.map((run) => max(run))),
  };
}

/** A spread as `p50 / p99 / max`. */
export function showSpread(value: Spread): string {
  return `${ms(value.p50)} / ${ms(value.p99)} / ${ms(value.max)}`;
}

/** The largest value (0 for none). */
export function max(values: readonly number[]): number {
  return values.reduce((a, b) => Math.max(a, b), 0);
}

/** Milliseconds with a sensible number of decimals. */
export function ms(value: number): string {
  if (value >= 100) return `${value.toFixed(0)} ms`;
  if (value >= 10) return `${value.toFixed(1)} ms`;
  return `${value.toFixed(2)} ms`;
}

/** A count with thousands separators. */
export function count(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}

/** Bytes as MB (10^6) with one decimal. */
export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** A ratio with two significant decimals, or "—". */
export function ratio(value: number): string {
  if (!Number.isFinite(value)) return "—";
  if (value >= 100) return `${value.toFixed(0)}×`;
  if (value >= 10) return `${value.toFixed(1)}×`;
  return `${value.toFixed(2)}×`;
}

/** Writes text to stdout in full (the table and progress are output, not logging). */
export function out(text: string): void {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  while (offset < bytes.length) {
    offset += Deno.stdout.writeSync(bytes.subarray(offset));
  }
}

/** A progress line on stderr, so stdout stays the table. */
export function progress(text: string): void {
  const bytes = new TextEncoder().encode(`bench: ${text}\n`);
  let offset = 0;
  while (offset < bytes.length) {
    offset += Deno.stderr.writeSync(bytes.subarray(offset));
  }
}

/** The machine, the runtime and SQLite, for the report's head. */
export interface Machine {
  cpu: string;
  cores: number;
  memory: string;
  os: string;
  deno: string;
  v8: string;
  sqlite: string;
  date: string;
}

/** Describes this machine and runtime. */
export function machine(): Machine {
  let cpu = "unknown";
  let memory = "unknown";
  try {
    const info = Deno.readTextFileSync("/proc/cpuinfo");
    cpu = info.match(/^model name\s*:\s*(.*)$/m)?.[1]?.trim() ?? cpu;
  } catch {
    // Not Linux: the CPU stays unnamed.
  }
  try {
    const total = Deno.systemMemoryInfo().total;
    memory = `${(total / 2 ** 30).toFixed(1)} GiB`;
  } catch {
    // Not available here.
  }
  const db = new DatabaseSync(":memory:");
  const sqlite = String(db.prepare("SELECT sqlite_version() AS v").get()?.v);
  db.close();
  return {
    cpu,
    cores: navigator.hardwareConcurrency,
    memory,
    os: `${Deno.build.os} ${Deno.osRelease()} (${Deno.build.arch})`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    sqlite,
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  };
}

const HEAD = [
  "figure",
  "value",
  "reference (same run)",
  "ratio",
  "target",
  "met",
];

function cells(row: Row): string[] {
  const met = row.met === null ? "n/a" : row.met ? "yes" : "NO";
  return [row.figure, row.value, row.reference, row.ratio, row.target, met];
}

/** The rows as a plain aligned table for a terminal. */
export function textTable(rows: readonly Row[]): string {
  const table = [HEAD, ...rows.map(cells)];
  const widths = HEAD.map((_, i) =>
    Math.max(...table.map((line) => [...line[i]!].length))
  );
  const pad = (text: string, width: number) =>
    text + " ".repeat(Math.max(0, width - [...text].length));
  const lines = table.map((line) =>
    line.map((cell, i) => pad(cell, widths[i]!)).join("  ").trimEnd()
  );
  lines.splice(1, 0, widths.map((width) => "-".repeat(width)).join("  "));
  return lines.join("\n") + "\n";
}

function escape(text: string): string {
  return text.replaceAll("|", "\\|");
}

/** The rows as a markdown table. */
export function markdownTable(rows: readonly Row[]): string {
  const line = (items: string[]) => `| ${items.map(escape).join(" | ")} |`;
  return [
    line(HEAD),
    line(HEAD.map(() => "---")),
    ...rows.map((row) => line(cells(row))),
  ].join("\n") + "\n";
}

/** What the report says besides the rows. */
export interface ReportInput {
  machine: Machine;
  command: string;
  smoke: boolean;
  seconds: number;
  rows: readonly Row[];
  sections: readonly Section[];
  /** Markdown written by hand about the gaps; kept between runs. */
  notes: string;
}

/** BENCHMARKS.md. */
export function markdownReport(input: ReportInput): string {
  const m = input.machine;
  const parts = [
    "# Benchmarks\n",
    `Written by \`${input.command}\` (tests/bench/bench.ts)${
      input.smoke
        ? ", SMOKE run: sizes are tiny and no figure means anything"
        : ""
    }. Timings are medians over repeated runs unless a percentile is named;` +
    " every figure that can be compared with a limit measured in the same run" +
    " shows that reference beside it and the ratio.\n",
    "| machine | |\n| --- | --- |",
    `| date | ${m.date} |`,
    `| CPU | ${escape(m.cpu)}, ${m.cores} cores |`,
    `| memory | ${m.memory} |`,
    `| OS | ${escape(m.os)} |`,
    `| Deno | ${m.deno} (V8 ${m.v8}) |`,
    `| SQLite | ${m.sqlite} (node:sqlite) |`,
    `| run time | ${(input.seconds / 60).toFixed(1)} min |\n`,
    "## Results\n",
    markdownTable(input.rows),
  ];
  if (input.notes.trim() !== "") parts.push(input.notes.trim() + "\n");
  for (const section of input.sections) {
    parts.push(`## ${section.title}\n`, section.body.trim() + "\n");
  }
  return parts.join("\n");
}
