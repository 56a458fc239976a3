/**
 * Security end to end: file modes (also after they were loosened by hand),
 * symbolic links planted at the socket and database paths, FTS syntax in a
 * search, shell syntax in tool arguments, a tool's output size, and what the
 * daemon's own permission flags leave out.
 */
import assert from "node:assert/strict";
import { resolvePaths } from "../src/base/paths.ts";
import {
  Daemon,
  daemonEnv,
  exists,
  inheritedEnv,
} from "./support/daemon_harness.ts";
import { FakeLlm, reply } from "./support/fake_llm.ts";
import {
  isIdle,
  type Received,
  type SocketClient,
} from "./support/socket_client.ts";

const TOOLS = new URL("./fixtures/tools/", import.meta.url).pathname;
const PROBE = new URL("./fixtures/outside_probe.ts", import.meta.url).pathname;

async function modeOf(path: string): Promise<string> {
  const info = await Deno.lstat(path);
  return ((info.mode ?? 0) & 0o777).toString(8);
}

/** The paths a daemon with this home will use, with its dirs made as the harness makes them. */
async function pathsIn(home: string) {
  const env = daemonEnv(home);
  const paths = resolvePaths((name) => env[name as keyof typeof env]);
  await Deno.mkdir(paths.runtimeDir, { recursive: true, mode: 0o700 });
  await Deno.mkdir(paths.dataDir, { recursive: true, mode: 0o700 });
  return paths;
}

async function ask(client: SocketClient, text: string): Promise<Received[]> {
  await client.send({ type: "ask", text });
  return await client.until(isIdle);
}

async function withDirs(
  test: (home: string, outside: string) => Promise<void>,
): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "da-sec-" });
  const outside = await Deno.makeTempDir({ prefix: "da-outside-" });
  try {
    await test(home, outside);
  } finally {
    await Deno.remove(home, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
}

Deno.test("socket 0600, data dir 0700, database and its -wal/-shm 0600, again after a chmod 0777 and a restart", async () => {
  await using llm = await FakeLlm.start();
  await withDirs(async (home) => {
    const paths = await pathsIn(home);
    const db = paths.dbPath;
    const expected = {
      socket: "600",
      dataDir: "700",
      db: "600",
      wal: "600",
      shm: "600",
    };
    const modes = async () => ({
      socket: await modeOf(paths.socketPath),
      dataDir: await modeOf(paths.dataDir),
      db: await modeOf(db),
      wal: await modeOf(`${db}-wal`),
      shm: await modeOf(`${db}-shm`),
    });
    const loosen = async () => {
      for (
        const path of [
          paths.dataDir,
          db,
          `${db}-wal`,
          `${db}-shm`,
          paths.socketPath,
        ]
      ) {
        if (await exists(path)) await Deno.chmod(path, 0o777);
      }
    };

    {
      await using daemon = await Daemon.start({ llmUrl: llm.url, home });
      await using client = await daemon.connect();
      await client.next("hello");
      await ask(client, "Remember this");
      assert.deepEqual(await modes(), expected);
      // Killed, so the -wal and -shm stay behind to be loosened too.
      await client.close();
      await daemon.stop("SIGKILL");
    }
    await loosen();
    assert.equal(await modeOf(`${db}-wal`), "777");
    {
      await using daemon = await Daemon.start({ llmUrl: llm.url, home });
      assert.deepEqual(await modes(), expected);
      await using client = await daemon.connect();
      await client.next("hello");
      await client.send({ type: "open", id: 1 });
      assert.deepEqual((await client.next("conversation")).turns, [
        { user: "Remember this", reply: "Hello there.", tools: [] },
      ]);
      await client.close();
      assert.equal((await daemon.stop("SIGTERM")).code, 0);
    }
    assert.equal(await exists(paths.socketPath), false, "socket removed");
    await loosen();
    {
      await using daemon = await Daemon.start({ llmUrl: llm.url, home });
      await using client = await daemon.connect();
      await client.next("hello");
      await ask(client, "And now");
      assert.deepEqual(await modes(), expected);
    }
  });
});

Deno.test("a symlink at the socket path is replaced, never followed", async () => {
  await using llm = await FakeLlm.start();
  await withDirs(async (home, outside) => {
    const paths = await pathsIn(home);
    const precious = `${outside}/precious`;
    await Deno.writeTextFile(precious, "keep me");
    // One link to a file elsewhere, one dangling into the writable data dir,
    // where only the daemon's care (not its grants) keeps it from writing.
    const targets = [precious, `${paths.dataDir}/elsewhere.sock`];
    for (const target of targets) {
      await Deno.symlink(target, paths.socketPath);
      await using daemon = await Daemon.start({ llmUrl: llm.url, home });
      const info = await Deno.lstat(paths.socketPath);
      assert.ok(info.isSocket && !info.isSymlink);
      assert.equal(await modeOf(paths.socketPath), "600");
      await using client = await daemon.connect();
      await client.send({ type: "ping" });
      await client.next("hello");
      await client.next("pong");
      assert.match(daemon.log, /removed a symlink at the socket path/);
      await client.close();
      await daemon.stop("SIGTERM");
    }
    assert.equal(await Deno.readTextFile(precious), "keep me");
    assert.equal(await exists(`${paths.dataDir}/elsewhere.sock`), false);
  });
});

Deno.test("a symlink at the database, -wal or -shm path stops the start and writes nothing through it", async () => {
  await using llm = await FakeLlm.start();
  await withDirs(async (home, outside) => {
    const paths = await pathsIn(home);
    const db = paths.dbPath;
    const foreign = `${outside}/history.db`;
    await Deno.writeTextFile(foreign, "not a database of ours");
    const cases: [string, string][] = [
      [db, foreign],
      [db, `${paths.dataDir}/elsewhere.db`],
      [`${db}-wal`, `${paths.dataDir}/elsewhere.db-wal`],
      [`${db}-shm`, `${outside}/history.db-shm`],
    ];
    for (const [link, target] of cases) {
      await Deno.symlink(target, link);
      await assert.rejects(
        Daemon.start({ llmUrl: llm.url, home }),
        (error: Error) => {
          assert.match(error.message, /daemon exited with 1 before listening/);
          assert.match(error.message, /is a symbolic link; it is not followed/);
          return true;
        },
      );
      await Deno.remove(link);
    }
    assert.equal(await Deno.readTextFile(foreign), "not a database of ours");
    const names = async (dir: string) =>
      (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();
    assert.deepEqual(await names(outside), ["history.db"]);
    assert.deepEqual(await names(paths.dataDir), []);
  });
});

Deno.test("FTS syntax in a search is plain text: it never widens the match", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  const turns: [string, string][] = [
    ["alpha apples", "red fruit"],
    ["beta bananas", "yellow fruit"],
    ["alpha OR beta is literal here", "a phrase"],
  ];
  for (const [question, answer] of turns) {
    llm.enqueue(reply({ content: [answer] }));
    await ask(client, question);
    await client.send({ type: "new" });
    await client.next("conversation");
  }
  const cases: [string, number[]][] = [
    ["alpha", [1, 3]],
    ["alpha OR beta", [3]],
    ["red OR yellow", []],
    ["fruit NOT red", []],
    ["fruit AND yellow", []],
    ["NEAR(alpha apples)", []],
    ["user:beta", []],
    ["reply:fruit", []],
    ["{user reply}: alpha", []],
    ["*", []],
    ['"', []],
    ['apples"', [1]],
    ['" OR 1=1 --', []],
    ["(alpha)", [1, 3]],
    ["^beta", [2, 3]],
    ["-red", [1]],
    ["alpha*", [1, 3]],
    ["\u0000alpha", [1, 3]],
    ["'", []],
  ];
  for (const [q, ids] of cases) {
    await client.send({ type: "search", q });
    const answer = await client.next();
    assert.equal(answer.type, "results", `${q}: ${JSON.stringify(answer)}`);
    assert.deepEqual(
      (answer.items as { id: number }[]).map((item) => item.id).sort(),
      ids,
      `search ${JSON.stringify(q)}`,
    );
  }
});

Deno.test("tool arguments never reach a shell, and a tool's output is cut at tool_output_limit", async () => {
  // Room for every result: a dozen calls with their outputs pass 4,096 tokens.
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 32768 }],
  });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
    config: "tool_output_limit = 1000\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const marks = await Deno.makeTempDir({ prefix: "da-marks-" });
  try {
    const payloads = [
      `$(touch ${marks}/1)`,
      `\`touch ${marks}/2\``,
      `x; touch ${marks}/3`,
      `x && touch ${marks}/4 || touch ${marks}/4`,
      `x | touch ${marks}/5`,
      `x\ntouch ${marks}/6`,
      `'; touch ${marks}/7; '`,
      `"; touch ${marks}/8; "`,
      `x > ${marks}/9`,
      `${marks}/*`,
      "$HOME ${PATH} ~ $((6*7))",
      "--help",
    ];
    llm.enqueue(
      reply({
        toolCalls: payloads.map((text) => ({
          name: "echo_args",
          arguments: JSON.stringify({ text, note: text }),
        })),
      }),
      reply({
        toolCalls: [{
          name: "big_output",
          arguments: JSON.stringify({ bytes: 20_000_000, line: "spam" }),
        }],
      }),
      reply({ content: ["Done."] }),
    );
    await ask(client, "Try the tools");
    type Message = { role: string; content: string };
    const results = (llm.chats[1]!.body as { messages: Message[] }).messages
      .filter((m) => m.role === "tool").map((m) => m.content);
    assert.equal(results.length, payloads.length);
    for (const [i, text] of payloads.entries()) {
      const result = results[i]!;
      assert.ok(result.includes(`[${text}]\n`), result);
      assert.ok(result.includes(`[--label=${text}!]`), result);
      assert.ok(
        result.includes(`stdin=${JSON.stringify({ text, note: text })}`),
      );
    }
    assert.deepEqual(await Array.fromAsync(Deno.readDir(marks)), []);

    const big = (llm.chats[2]!.body as { messages: Message[] }).messages.at(
      -1,
    )!;
    assert.equal(big.role, "tool");
    assert.match(
      big.content,
      /\n\[output cut: 20000000 bytes, first 1000 shown\]$/,
    );
    assert.ok(big.content.length < 1100, `${big.content.length} characters`);
    assert.match(big.content, /^(spam\n)+sp?a?m?\n?\[output cut/);
  } finally {
    await Deno.remove(marks, { recursive: true });
  }
});

Deno.test("the daemon's own flags deny reads, writes, env, net and run outside its grants", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  // The running daemon has exactly these flags, none of them broad.
  const cmdline = (await Deno.readTextFile(`/proc/${daemon.child.pid}/cmdline`))
    .split("\0");
  for (const flag of daemon.flags) assert.ok(cmdline.includes(flag), flag);
  assert.ok(
    cmdline.every((arg) => !/^(-A|--allow-all|--allow-[a-z]+)$/.test(arg)),
    cmdline.join(" "),
  );

  await using other = await FakeLlm.start();
  const outside = await Deno.makeTempDir({ prefix: "da-outside-" });
  try {
    await Deno.writeTextFile(`${outside}/secret.txt`, "private");
    const inside = `${daemon.paths.configDir}/config.toml`;
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        ...daemon.flags,
        PROBE,
        `${outside}/secret.txt`,
        outside,
        inside,
        new URL(other.url).port,
      ],
      env: { ...inheritedEnv(), ...daemon.env, DA_PROBE_SECRET: "hunter2" },
      clearEnv: true,
      stdin: "null",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), {
      "read outside": "NotCapable",
      "stat outside": "NotCapable",
      "write outside": "NotCapable",
      "list outside": "NotCapable",
      "read inside": "ok",
      "env outside": "NotCapable",
      "net outside": "NotCapable",
      "run shell": "NotCapable",
    });
    assert.deepEqual(
      (await Array.fromAsync(Deno.readDir(outside))).map((e) => e.name),
      ["secret.txt"],
    );
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
