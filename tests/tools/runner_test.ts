import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { setLogSink } from "../../src/base/log.ts";
import { loadTools, type ToolDef } from "../../src/tools/load.ts";
import {
  groupKillHelper,
  placeholder,
  runnerExecutables,
  type RunOptions,
  runTool,
  type ToolOutcome,
} from "../../src/tools/runner.ts";

const FIXTURES = fileURLToPath(new URL("../fixtures/tools", import.meta.url));
const SCOPED_RUN = fileURLToPath(
  new URL("../fixtures/tools/scoped_run.ts", import.meta.url),
);
const OPTIONS: RunOptions = { outputLimit: 16384, defaultTimeout: 10 };

setLogSink({ write() {} });
const { tools: loaded } = await loadTools([FIXTURES]);
const TOOLS: ReadonlyMap<string, ToolDef> = new Map(
  loaded.map((tool) => [tool.name, tool]),
);

function tool(name: string): ToolDef {
  const found = TOOLS.get(name);
  assert.ok(found, `fixture tool ${name} did not load`);
  return found;
}

function run(
  name: string,
  args: unknown,
  options: Partial<RunOptions> = {},
): Promise<ToolOutcome> {
  const json = typeof args === "string" ? args : JSON.stringify(args);
  return runTool(TOOLS, name, json, { ...OPTIONS, ...options });
}

/** Whether a process still runs (a zombie has already died). */
function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const state = stat.slice(
      stat.lastIndexOf(")") + 2,
      stat.lastIndexOf(")") + 3,
    );
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

function pidsIn(content: string, label: string): number[] {
  return [...content.matchAll(new RegExp(`^${label} (\\d+)$`, "gm"))].map((m) =>
    Number(m[1])
  );
}

function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

Deno.test("hostile arguments reach the tool as one literal argv element and as literal JSON on stdin", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/keep`, "");
    const hostile =
      `"; rm -f ${dir}/keep #" $(touch ${dir}/pwned) \`touch ${dir}/pwned2\` ; 'x' {note}`;
    const args = { text: hostile, count: 7 };
    const outcome = await run("echo_args", args);
    assert.equal(outcome.status, "exit 0");
    assert.equal(
      outcome.content,
      "argc=5\n" +
        `[${hostile}]\n` +
        `[--label=${hostile}!]\n` +
        "[7]\n" +
        "[]\n" +
        "[{undeclared}]\n" +
        `stdin=${JSON.stringify(args)}`,
    );
    assert.ok((await Deno.stat(`${dir}/keep`)).isFile);
    await assert.rejects(Deno.stat(`${dir}/pwned`), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(`${dir}/pwned2`), Deno.errors.NotFound);

    const echoed = await run("stdin_echo", {
      text: '$(id) `id` "; rm -rf ~ #"',
    });
    assert.equal(echoed.content, '{"text":"$(id) `id` \\"; rm -rf ~ #\\""}');
    assert.equal(echoed.bytes, new TextEncoder().encode(echoed.content).length);
    assert.equal(echoed.lines, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("output past the limit is cut on a UTF-8 boundary with a note", async () => {
  const cut = await run("big_output", { bytes: 52340, line: "abc" });
  assert.equal(cut.status, "exit 0");
  assert.equal(cut.bytes, 52340);
  assert.equal(cut.lines, 13085);
  assert.equal(
    cut.content,
    "abc\n".repeat(4096) + "[output cut: 52340 bytes, first 16384 shown]",
  );

  // "é€\n" is 6 bytes: byte 16384 is the middle of a "€".
  const multibyte = await run("big_output", { bytes: 30000, line: "é€" });
  const [shown, note] = multibyte.content.split("\n[output cut: ");
  assert.equal(note, "30000 bytes, first 16382 shown]");
  assert.equal(shown, "é€\n".repeat(2730) + "é");

  const exact = await run("big_output", { bytes: 100, line: "x" }, {
    outputLimit: 100,
  });
  assert.equal(exact.content, "x\n".repeat(50));
});

Deno.test("huge output is counted in full but not kept", async () => {
  const outcome = await run("big_output", { bytes: 20_000_000, line: "y" }, {
    outputLimit: 10,
  });
  assert.equal(outcome.status, "exit 0");
  assert.equal(outcome.bytes, 20_000_000);
  assert.equal(outcome.lines, 10_000_000);
  assert.equal(
    outcome.content,
    "y\ny\ny\ny\ny\n[output cut: 20000000 bytes, first 10 shown]",
  );
});

Deno.test("a non-zero exit reports its status and the tail of stderr", async () => {
  const outcome = await run("fail", { code: 3 });
  assert.equal(outcome.status, "exit 3");
  assert.match(
    outcome.content,
    /^The tool fail failed with exit status 3\.\nstderr \(last 2048 bytes\):\n/,
  );
  assert.match(outcome.content, /TAIL-OF-STDERR: cannot reach the service\n/);
  assert.ok(!outcome.content.includes("HEAD-OF-STDERR"));
  assert.ok(outcome.content.endsWith("\nstdout:\npartial result\n"));
  assert.equal(outcome.bytes, 15);
  assert.equal(outcome.lines, 1);
});

/** Resolves once none of the pids runs, or rejects after `ms`. */
async function ended(pids: number[], ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (pids.some(alive)) {
    if (performance.now() > deadline) {
      throw new Error(`still running after ${ms} ms: ${pids.filter(alive)}`);
    }
    await new Promise((done) => setTimeout(done, 20));
  }
}

Deno.test("with the group kill helper, a tool past its timeout is killed with what it started", async () => {
  const helper = groupKillHelper();
  assert.ok(helper, "coreutils timeout is needed");
  const outcome = await run("sleeper", {}, { timeoutHelper: helper });
  assert.equal(outcome.status, "timeout");
  assert.match(
    outcome.content,
    /^The tool sleeper was stopped after 0\.5 seconds, its time limit, and gave no complete result\.\nOutput before it was stopped:\nchild \d+\nchild \d+\n$/,
  );
  const children = pidsIn(outcome.content, "child");
  assert.equal(children.length, 2);
  try {
    // One child ignores SIGTERM: only a SIGKILL to the whole group ends it.
    assert.deepEqual(children.filter(alive), []);
  } finally {
    killAll(children);
  }
});

Deno.test("measured: by default a timed-out tool is killed alone; children that neither write nor exit live on, yet the call returns", async () => {
  const started = performance.now();
  const outcome = await run("sleeper", {});
  const children = pidsIn(outcome.content, "child");
  try {
    assert.equal(outcome.status, "timeout");
    assert.ok(performance.now() - started < 5000, "the call returned");
    assert.equal(children.length, 2);
    assert.deepEqual(children.filter(alive), children);
  } finally {
    killAll(children);
  }
});

Deno.test("by default a child that keeps writing ends on the closed pipe once its timed-out tool is killed", async () => {
  const outcome = await run("chatty", {});
  const children = pidsIn(outcome.content, "child");
  try {
    assert.equal(outcome.status, "timeout");
    assert.equal(children.length, 1);
    assert.match(outcome.content, /\nchild \d+\ntick\n/);
    await ended(children, 3000);
  } finally {
    killAll(children);
  }
});

Deno.test("a process that escapes the group and holds stdout does not hold the call", async () => {
  const outcome = await run("escaper", {});
  const escaped = pidsIn(outcome.content, "escaped");
  try {
    assert.equal(outcome.status, "exit 0");
    assert.equal(escaped.length, 1);
  } finally {
    killAll(escaped);
  }
});

Deno.test({
  name:
    "arguments larger than a pipe, stuck on a stdin a left-behind process holds, do not hold the call",
  // The stuck write cannot be cancelled: it fails only once the holder is
  // killed below, after the test has its answer.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const outcome = await run("holder", { text: "x".repeat(200_000) });
    const held = pidsIn(outcome.content, "holder");
    try {
      assert.equal(outcome.status, "exit 0");
      assert.equal(held.length, 1);
      assert.ok(outcome.durationMs < 5000, `${outcome.durationMs} ms`);
    } finally {
      killAll(held);
    }
  },
});

Deno.test("a tool that never reads stdin and prints nothing still succeeds", async () => {
  const outcome = await run("stdin_closed", {});
  assert.deepEqual(
    {
      status: outcome.status,
      content: outcome.content,
      bytes: outcome.bytes,
      lines: outcome.lines,
    },
    { status: "exit 0", content: "[no output]", bytes: 0, lines: 0 },
  );
});

Deno.test("schema violations come back as results and the tool does not run", async () => {
  const dir = await Deno.makeTempDir();
  const proof = `${dir}/ran`;
  try {
    const cases: [unknown, string][] = [
      [
        "{not json",
        /^The arguments for touch are not valid JSON \(.+\)\. Send one JSON object; parameters: path \(string, required\), count \(integer, required\), mode \(string\)\. The tool did not run\.$/
          .source,
      ],
      [
        "[1, 2]",
        "The arguments for touch must be a JSON object, not [1,2]; parameters: path (string, required), count (integer, required), mode (string). The tool did not run.",
      ],
      [
        { count: 1 },
        'Invalid arguments for touch: missing required parameter "path" (string). Parameters: path (string, required), count (integer, required), mode (string). The tool did not run.',
      ],
      [
        { path: proof, count: 2.5, mode: "quick", extra: true },
        'Invalid arguments for touch: "count" must be an integer, not 2.5; "mode" must be one of "fast", "slow", not "quick"; unknown parameter "extra". Parameters: path (string, required), count (integer, required), mode (string). The tool did not run.',
      ],
      [
        { path: 42, count: "3" },
        'Invalid arguments for touch: "path" must be a string, not 42; "count" must be an integer, not "3". Parameters: path (string, required), count (integer, required), mode (string). The tool did not run.',
      ],
    ];
    for (const [args, expected] of cases) {
      const outcome = await run("touch", args);
      assert.equal(outcome.status, "invalid arguments");
      if (args === "{not json") {
        assert.match(outcome.content, new RegExp(expected));
      } else assert.equal(outcome.content, expected);
      assert.equal(outcome.bytes, 0);
    }
    await assert.rejects(Deno.stat(proof), Deno.errors.NotFound);

    const typed = await run(
      "typed",
      '{"name": "n", "ratio": 1e400, "count": 1, "loud": "yes", "unit": "k"}',
    );
    assert.equal(
      typed.content.split(". Parameters:")[0],
      'Invalid arguments for typed: "ratio" must be a number, not Infinity; "loud" must be a boolean, not "yes"; "unit" must be one of "c", "f", not "k"',
    );

    const ok = await run("touch", { path: proof, count: 1, mode: null });
    assert.equal(ok.status, "exit 0");
    assert.ok((await Deno.stat(proof)).isFile);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("typed values are written into argv as text", async () => {
  const outcome = await run("typed", {
    name: "n",
    ratio: 0.5,
    count: -2,
    loud: false,
    unit: "f",
  });
  assert.equal(outcome.status, "exit 0");
  assert.ok(
    outcome.content.startsWith(
      "argc=5\n[n]\n[0.5]\n[-2]\n[false]\n[f]\nstdin=",
    ),
  );
});

Deno.test("an unknown tool is answered with the list of tools", async () => {
  const outcome = await run("nope", {});
  assert.equal(outcome.status, "unknown tool");
  assert.equal(
    outcome.content,
    `Unknown tool "nope". Available tools: ${
      [...TOOLS.keys()].sort().join(", ")
    }.`,
  );
});

Deno.test("a tool that cannot start says so, with or without the helper", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const gone: ToolDef = { ...tool("touch"), executable: `${dir}/removed.sh` };
    const tools = new Map([["touch", gone]]);
    const args = JSON.stringify({ path: `${dir}/x`, count: 1 });
    const viaHelper = await runTool(tools, "touch", args, {
      ...OPTIONS,
      timeoutHelper: groupKillHelper(),
    });
    assert.equal(viaHelper.status, "failed to start");
    assert.match(
      viaHelper.content,
      /^The tool touch failed to start: failed to run command .*removed\.sh.*No such file/,
    );
    const direct = await runTool(tools, "touch", args, {
      ...OPTIONS,
      timeoutHelper: null,
    });
    assert.equal(direct.status, "failed to start");
    assert.match(direct.content, /^The tool touch failed to start: .+/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("daemon shutdown stops a running tool; an aborted signal runs nothing", async () => {
  const slow: ToolDef = { ...tool("sleeper"), timeout: 60 };
  const tools = new Map([["sleeper", slow]]);
  const shutdown = new AbortController();
  const running = runTool(tools, "sleeper", "{}", {
    ...OPTIONS,
    signal: shutdown.signal,
  });
  shutdown.abort();
  const outcome = await running;
  killAll(pidsIn(outcome.content, "child"));
  assert.equal(outcome.status, "stopped");

  const dir = await Deno.makeTempDir();
  try {
    const proof = `${dir}/ran`;
    const never = await run("touch", { path: proof, count: 1 }, {
      signal: AbortSignal.abort(),
    });
    assert.equal(never.status, "stopped");
    await assert.rejects(Deno.stat(proof), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("placeholder records the measurements, not the content", () => {
  const outcome: ToolOutcome = {
    content: "secret weather text",
    bytes: 1234,
    lines: 20,
    durationMs: 412,
    status: "exit 0",
  };
  assert.equal(
    placeholder("weather", outcome),
    "[tool result not kept: weather, 1234 bytes, 20 lines, 0.4 s, exit 0]",
  );
  assert.equal(
    placeholder("date", {
      ...outcome,
      bytes: 1,
      lines: 1,
      durationMs: 30_000,
      status: "timeout",
    }),
    "[tool result not kept: date, 1 byte, 1 line, 30.0 s, timeout]",
  );
});

Deno.test("under scoped grants, tools resolve, uncovered ones are skipped, and a timeout kills the group only with tool_group_kill", async () => {
  assert.deepEqual(runnerExecutables({ tool_group_kill: false }), []);
  const helpers = runnerExecutables({ tool_group_kill: true });
  assert.equal(helpers.length, 1, "coreutils timeout is needed");
  const dir = Deno.realPathSync(FIXTURES);
  const cat = tool("stdin_echo").executable;
  const exact = [`${dir}/sleeper.sh`, cat];
  const deno = Deno.execPath();
  const call = async (
    name: string,
    args: string,
    group: "group" | "leader" = "leader",
  ) => {
    const allowRun = [...(group === "group" ? helpers : []), ...exact];
    const output = await new Deno.Command(deno, {
      args: [
        "run",
        "--no-prompt",
        `--allow-read=${dir}`,
        `--allow-run=${allowRun.join(",")}`,
        "--allow-env=PATH",
        SCOPED_RUN,
        dir,
        name,
        args,
        group,
      ],
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    return JSON.parse(new TextDecoder().decode(output.stdout));
  };

  const report = await call("sleeper", "{}", "group");
  const children = pidsIn(report.outcome.content, "child");
  try {
    assert.equal(report.outcome.status, "timeout");
    assert.equal(children.length, 2);
    assert.deepEqual(children.filter(alive), []);
  } finally {
    killAll(children);
  }
  assert.deepEqual(report.helper, helpers[0]);

  const alone = await call("sleeper", "{}");
  const left = pidsIn(alone.outcome.content, "child");
  try {
    assert.equal(alone.outcome.status, "timeout");
    assert.equal(alone.helper, null, "no grant, no helper");
    assert.deepEqual(left.filter(alive), left, "only the tool was killed");
  } finally {
    killAll(left);
  }
  assert.deepEqual(report.tools, [
    { name: "sleeper", executable: `${dir}/sleeper.sh` },
    { name: "stdin_echo", executable: cat },
  ]);
  assert.ok(
    report.skipped.some((s: { reason: string }) =>
      s.reason === `--allow-run does not cover ${dir}/echo_args.sh`
    ),
  );

  const echoed = await call("stdin_echo", '{"text":"$(id)"}');
  assert.equal(echoed.outcome.status, "exit 0");
  assert.equal(echoed.outcome.content, '{"text":"$(id)"}');
});
