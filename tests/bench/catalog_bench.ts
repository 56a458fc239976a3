/**
 * Conversation commands through the daemon on a history of 100,000
 * conversations: `open` of a 500-turn conversation, `list` (limit 200) and
 * `delete` of a 500-turn conversation, each from the command written to its
 * answer read. The same calls on the Store alone show where the time goes.
 */
import { DatabaseSync } from "node:sqlite";
import { Store } from "../../src/store/store.ts";
import { Daemon, daemonEnv } from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { resolvePaths } from "../../src/base/paths.ts";
import { BenchClient } from "./bench_client.ts";
import { layHistory } from "./contention_bench.ts";
import { historyFile } from "./history_bench.ts";
import { BIG_CONVERSATIONS, BIG_TURNS } from "./history_gen.ts";
import {
  count,
  type GroupResult,
  max,
  mb,
  median,
  ms,
  progress,
  type Row,
} from "./report.ts";

/** What the catalog figures need. */
export interface CatalogOptions {
  seed: number;
  cacheDir?: string;
  mode: "full" | "smoke";
}

/** Conversations in the file: 100,000 in a full run. */
const CONVERSATIONS = { full: 100_000, smoke: 500 };
/** Repeats of open and list; deletes use the big conversations 2… */
const REPEATS = { full: 10, smoke: 2 };
const DELETES = { full: 5, smoke: 2 };

interface Answer {
  ms: number;
  bytes: number;
  /** True when the daemon closed the connection instead of answering. */
  dropped: boolean;
}

async function roundTrip(
  client: BenchClient,
  command: Record<string, unknown>,
  answer: string,
): Promise<Answer> {
  const reply = client.wait((event) => event.type === answer);
  const sent = performance.now();
  try {
    const started = await client.send(command);
    const { event, at } = await reply;
    return {
      ms: at - started,
      bytes: JSON.stringify(event).length,
      dropped: false,
    };
  } catch {
    // The send or the wait failed: the daemon closed this connection.
    await reply.catch(() => {});
    return { ms: performance.now() - sent, bytes: 0, dropped: true };
  }
}

async function connect(path: string): Promise<BenchClient> {
  const client = await BenchClient.connect(path);
  await client.wait((event) => event.type === "hello");
  return client;
}

function time(work: () => unknown): number {
  const started = performance.now();
  work();
  return performance.now() - started;
}

/** Runs the open, list and delete figures. */
export async function catalogBenchmarks(
  options: CatalogOptions,
  smoke: boolean,
): Promise<GroupResult> {
  const conversations = CONVERSATIONS[options.mode];
  const turns = BIG_CONVERSATIONS * BIG_TURNS + conversations -
    BIG_CONVERSATIONS;
  const file = historyFile({ ...options, turns }, "catalog");
  const home = await layHistory(file.path);
  const opens: number[] = [];
  const lists: number[] = [];
  const deletes: number[] = [];
  let openBytes = 0;
  let listBytes = 0;
  let deleteBytes = 0;
  let dropped = 0;
  let fullList = 0;
  const store = {
    open: [] as number[],
    list: [] as number[],
    delete: [] as number[],
    listAll: [] as number[],
    indexed: [] as number[],
    drain: [] as number[],
  };
  let plan: string[] = [];
  let indexedPlan: string[] = [];
  try {
    {
      await using llm = await FakeLlm.start();
      await using daemon = await Daemon.start({ llmUrl: llm.url, home });
      let client = await connect(daemon.paths.socketPath);
      progress(
        `catalog: open, list, delete over ${
          count(conversations)
        } conversations`,
      );
      for (let i = 0; i < REPEATS[options.mode]; i++) {
        const opened = await roundTrip(
          client,
          { type: "open", id: 1 },
          "conversation",
        );
        opens.push(opened.ms);
        openBytes = opened.bytes;
        await roundTrip(client, { type: "new" }, "conversation");
        const listed = await roundTrip(
          client,
          { type: "list", limit: 200 },
          "conversations",
        );
        lists.push(listed.ms);
        listBytes = listed.bytes;
      }
      for (let i = 0; i < DELETES[options.mode]; i++) {
        const deleted = await roundTrip(
          client,
          { type: "delete", id: 2 + i },
          "conversations",
        );
        deletes.push(deleted.ms);
        deleteBytes = Math.max(deleteBytes, deleted.bytes);
        if (deleted.dropped) {
          dropped++;
          await client.close();
          client = await connect(daemon.paths.socketPath);
        }
      }
      await client.close();
    }
    // The same calls on the Store alone, on what is left of the copy.
    const env = daemonEnv(home);
    using history = new Store(resolvePaths((name) => env[name]).dbPath);
    fullList = JSON.stringify({ type: "conversations", items: history.list() })
      .length;
    for (let i = 0; i < REPEATS[options.mode]; i++) {
      store.open.push(time(() => history.open(1)));
      store.list.push(time(() => history.list(200)));
      store.listAll.push(time(() => history.list()));
    }
    // Upkeep the daemon left (its deletes' rows) first, so it is not counted.
    while (history.maintain());
    const last = BIG_CONVERSATIONS;
    store.delete.push(time(() => history.delete(last)));
    // What the delete leaves to the store's upkeep, which runs it after the
    // answer in steps: the turns' rows and index entries, a batch a step.
    for (let more = true; more;) {
      const started = performance.now();
      more = history.maintain();
      store.drain.push(performance.now() - started);
    }
    history.close();
    // Why list is slow, and what an index on the sort order would give.
    const db = new DatabaseSync(history.path);
    try {
      const sql = `SELECT id, title, updated FROM conversations
                   ORDER BY updated DESC, id DESC LIMIT 200`;
      plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((row) =>
        String(row.detail)
      );
      db.exec(
        "CREATE INDEX bench_conversations_updated ON conversations(updated DESC, id DESC)",
      );
      const indexed = db.prepare(sql);
      for (let i = 0; i < REPEATS[options.mode]; i++) {
        store.indexed.push(time(() => indexed.all()));
      }
      indexedPlan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((row) =>
        String(row.detail)
      );
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
  const row = (
    id: string,
    figure: string,
    samples: number[],
  ): Row => ({
    id,
    figure,
    value: `${ms(median(samples))} (max ${ms(max(samples))})`,
    reference: "—",
    ratio: "—",
    target: "≤ 20 ms",
    met: smoke ? null : median(samples) <= 20,
  });
  return {
    rows: [
      row(
        "open",
        `open of a ${BIG_TURNS}-turn conversation (written → conversation read)`,
        opens,
      ),
      row(
        "list",
        `list, limit 200, over ${count(conversations)} conversations`,
        lists,
      ),
      {
        ...row(
          "delete",
          `delete of a ${BIG_TURNS}-turn conversation (written → conversations read)`,
          deletes,
        ),
        ...(dropped > 0
          ? {
            value:
              `asker dropped ${dropped} of ${deletes.length} times, after ${
                ms(median(deletes))
              }`,
            met: smoke ? null : false,
          }
          : {}),
      },
    ],
    sections: [{
      title: "Conversation commands",
      body: [
        `A history of ${
          count(conversations)
        } conversations (${BIG_CONVERSATIONS} of ${BIG_TURNS} turns, the rest of one turn; ${
          count(file.turns)
        } turns, ${mb(file.bytes)}).` +
        ` Through the daemon, medians of ${
          REPEATS[options.mode]
        } (open, list) and ${
          DELETES[options.mode]
        } (delete) round trips; answers: open ${mb(openBytes)}, list ${
          mb(listBytes)
        }, delete ${mb(deleteBytes)} of JSON.` +
        ` \`delete\` answers with every conversation left (${
          mb(fullList)
        } of JSON here)` +
        (dropped > 0
          ? `, more than a client's 4 MiB backlog: the daemon dropped the asking client ${dropped} of ${deletes.length} times instead of answering (the time shown is to the drop; the delete itself was done).\n`
          : ".\n"),
        "| call on the Store alone | median |",
        "| --- | --- |",
        `| open(${BIG_TURNS} turns) | ${ms(median(store.open))} |`,
        `| list(200) | ${ms(median(store.list))} |`,
        `| list() (every conversation) | ${ms(median(store.listAll))} |`,
        `| delete(${BIG_TURNS} turns) | ${ms(median(store.delete))} |`,
        `| its upkeep afterwards (rows and index entries removed): ${store.drain.length} steps, max ${
          ms(max(store.drain))
        } each | ${ms(store.drain.reduce((a, b) => a + b, 0))} in all |`,
        `| list(200) with an index on conversations(updated DESC, id DESC), on the copy | ${
          ms(median(store.indexed))
        } |`,
        "",
        `\`EXPLAIN QUERY PLAN\` of list: ${
          plan.map((line) => `\`${line}\``).join(", ")
        }; with the index: ${
          indexedPlan.map((line) => `\`${line}\``).join(", ")
        }.`,
      ].join("\n"),
    }],
  };
}
