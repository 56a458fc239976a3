/**
 * Runs the benchmark suite's smoke variant (`deno task bench --smoke`) as a
 * subprocess, so the benchmark code never rots. It asserts that every row
 * of the table was produced and the report written, never a number.
 */
import assert from "node:assert/strict";
import { inheritedEnv } from "./support/daemon_harness.ts";

const BENCH = new URL("./bench/bench.ts", import.meta.url).pathname;

/** Every row a run with both history sizes produces. */
const ROW_IDS = [
  "vectors.search.base",
  "vectors.recall.base",
  "vectors.load.base",
  "vectors.pickup.base",
  "vectors.rss.base",
  "vectors.int8.base",
  "vectors.search.large",
  "vectors.recall.large",
  "vectors.load.large",
  "vectors.pickup.large",
  "relay.1",
  "relay.16",
  "latency.8",
  "first_token",
  "stop.done",
  "stop.abort",
  "latency.search",
  "insert.base",
  "search.base",
  "search.worst.base",
  "insert.large",
  "search.large",
  "search.worst.large",
  "open",
  "list",
  "delete",
  "startup",
  "memory.idle",
  "memory.growth",
  "memory.leak",
  "tasks.start",
  "tasks.chat",
  "memory.fuzz",
  "backend.idle_cpu",
  "chat.cpu",
  "chat.startup",
  "web.relay",
  "web.render",
  "context.choose",
  "context.first_token",
  "prompt.short.shift.plain",
  "prompt.short.shift.compact",
  "prompt.short.noshift.plain",
  "prompt.short.noshift.compact",
  "prompt.long.shift.plain",
  "prompt.long.shift.compact",
  "prompt.long.noshift.plain",
  "prompt.long.noshift.compact",
  "prompt.summary_cost",
  "prompt.ask_during_summary",
  "voice.first_chunk",
  "voice.overhead",
  "voice.stop",
  "files.follow_up",
  "files.ask",
  "files.search",
  "memories.steady.shift",
  "memories.steady.noshift",
  "memories.first",
  "memories.ask_during_proposal",
  "meaning.first_token",
];

Deno.test("bench --smoke produces every row of the table and writes the report", async () => {
  const dir = await Deno.makeTempDir({ prefix: "da-bench-smoke-" });
  try {
    const report = `${dir}/BENCHMARKS.md`;
    const json = `${dir}/rows.json`;
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        BENCH,
        "--smoke",
        "--out",
        report,
        "--json",
        json,
      ],
      env: { ...inheritedEnv(), TMPDIR: dir },
      clearEnv: true,
      stdin: "null",
    }).output();
    const text = new TextDecoder();
    assert.equal(code, 0, text.decode(stderr).slice(-4000));
    const rows = JSON.parse(await Deno.readTextFile(json)) as {
      id: string;
      figure: string;
      value: string;
      reference: string;
      target: string;
    }[];
    assert.deepEqual(rows.map((row) => row.id).sort(), [...ROW_IDS].sort());
    for (const row of rows) {
      assert.notEqual(row.value.trim(), "", `row ${row.id} has no value`);
      assert.doesNotMatch(row.value, /NaN|undefined|Infinity/, `row ${row.id}`);
      assert.doesNotMatch(
        row.reference,
        /NaN|undefined|Infinity/,
        `row ${row.id}`,
      );
    }
    const markdown = await Deno.readTextFile(report);
    assert.match(markdown, /^# Benchmarks/);
    assert.match(markdown, /\| SQLite \| 3\.\d+/);
    assert.match(
      markdown,
      new RegExp(`\\| Deno \\| ${Deno.version.deno.replaceAll(".", "\\.")}`),
    );
    for (const row of rows) {
      assert.ok(
        markdown.includes(row.figure),
        `report lacks the row ${row.id}`,
      );
    }
    assert.match(text.decode(stdout), /relay throughput, 16 clients/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
