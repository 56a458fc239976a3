/**
 * Crash safety: the daemon is killed with SIGKILL at seeded random points of
 * its replies, round after round on the same history. After each restart
 * SQLite's and FTS5's integrity checks pass, every turn whose `done` a
 * client saw is stored, and no partial turn is: each stored reply is the
 * whole scripted reply of its question.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { log } from "../../src/base/log.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { answering, FakeLlm, type Plan } from "../support/fake_llm.ts";
import { HEAVY, seeded } from "../fixtures/chaos.ts";
import { isIdle } from "../support/socket_client.ts";

const ROUNDS = HEAVY ? 250 : 50;
const rng = seeded(20260802);

/** The scripted answer to one question: unique to it, in several tokens. */
function answerTokens(question: string): string[] {
  const words = rng.range(3, 12);
  return Array.from(
    { length: words },
    (_, i) => i === 0 ? `Answer to ${question}` : ` part ${i}`,
  );
}

interface History {
  /** Question → the whole reply scripted for it. */
  asked: Map<string, string>;
  /** Questions whose `done {stopped: false}` a client saw. */
  confirmed: Set<string>;
}

/** Opens the history from the test and checks it; returns the number of turns. */
function checkHistory(path: string, history: History, round: number): number {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    const integrity = db.prepare("PRAGMA integrity_check").all()
      .map((row) => String(Object.values(row)[0]));
    assert.deepEqual(integrity, ["ok"], `integrity_check after round ${round}`);
    assert.deepEqual(db.prepare("PRAGMA foreign_key_check").all(), []);
    // rank 1 also compares the index with the table it mirrors.
    db.exec(
      "INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)",
    );
    const rows = db.prepare("SELECT conv, seq, user, reply FROM turns")
      .all() as { conv: number; seq: number; user: string; reply: string }[];
    const stored = new Set<string>();
    for (const row of rows) {
      assert.ok(history.asked.has(row.user), `unknown turn ${row.user}`);
      assert.equal(
        row.reply,
        history.asked.get(row.user),
        `round ${round}: the stored reply of ${row.user} is partial`,
      );
      assert.ok(!stored.has(row.user), `${row.user} is stored twice`);
      stored.add(row.user);
    }
    for (const question of history.confirmed) {
      assert.ok(
        stored.has(question),
        `round ${round}: ${question} was done but is not stored`,
      );
    }
    const empty = db.prepare(
      `SELECT count(*) AS n FROM conversations c
       WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.conv = c.id)`,
    ).get();
    assert.equal(Number(empty?.n), 0, "a conversation without turns");
    return rows.length;
  } finally {
    db.close();
  }
}

Deno.test(`SIGKILL at random points of replies never loses a done turn nor keeps a partial one (seed ${rng.seed}, ${ROUNDS} kills)`, async () => {
  const plans = new Map<string, Plan>();
  await using llm = await FakeLlm.start({
    defaultScript: answering(plans, ["Thinking ", "it over."]),
  });
  const home = await Deno.makeTempDir({ prefix: "da-crash-" });
  const history: History = { asked: new Map(), confirmed: new Set() };
  const figures = { kills: 0, midReply: 0, afterDone: 0, turns: 0 };
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      await using daemon = await Daemon.start({ llmUrl: llm.url, home });
      figures.turns = checkHistory(daemon.paths.dbPath, history, round);
      if (round === ROUNDS) break;

      await using client = await daemon.connect();
      await client.next("hello");
      const asks = rng.range(1, 3);
      for (let i = 0; i < asks; i++) {
        const question = `r${round}q${i}`;
        const tokens = answerTokens(question);
        history.asked.set(question, tokens.join(""));
        plans.set(question, { tokens, tokenDelayMs: rng.pick([0, 1, 2]) });
        await client.send({ type: "ask", text: question });
        const last = i === asks - 1;
        // Events of a whole reply: user, state, 2 think, tokens, done, ctx, state.
        const full = tokens.length + 7;
        const killAfter = last ? rng.range(1, full) : full;
        let seen = 0;
        const events = await client.until((e) =>
          ++seen >= killAfter || isIdle(e)
        );
        if (events.some((e) => e.type === "done" && e.stopped === false)) {
          history.confirmed.add(question);
        }
        if (!last) continue;
        if (rng.chance(0.5)) {
          // Land the kill between events too, not only right after one.
          await new Promise((resolve) => setTimeout(resolve, rng.int(4)));
        }
        const status = await daemon.stop("SIGKILL");
        assert.equal(status.signal, "SIGKILL");
        figures.kills++;
        if (history.confirmed.has(question)) figures.afterDone++;
        else figures.midReply++;
      }
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
  assert.equal(figures.kills, ROUNDS);
  assert.ok(figures.turns >= history.confirmed.size);
  log.info("crash figures", {
    seed: rng.seed,
    ...figures,
    asked: history.asked.size,
    confirmed: history.confirmed.size,
  });
});
