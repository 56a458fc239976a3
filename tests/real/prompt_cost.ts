/**
 * What a turn costs the server (12.1): a 30-turn conversation through the
 * daemon, `history_turns` 10, 64-token replies, `compact` off, on a model
 * whose cache can shift and on a sliding-window one that cannot. Each
 * turn's `done.timings.prompt_n` (what the server evaluated) against the
 * limit a perfect cache leaves: the new question and the last reply as the
 * template renders them again, counted by the same server.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { reply } from "../support/fake_llm.ts";
import type { Received } from "../support/socket_client.ts";
import type { Backend } from "./backends.ts";
import { words } from "./replies.ts";
import { observe, report, type Scenario, turn } from "./scenario.ts";

/** Turns of each conversation. */
const TURNS = 30;
/**
 * The first turn measured: the window (ten turns) is full from the
 * eleventh, and turns 13 to 30 hold whole blocks of a window that moves in
 * blocks (a move every sixth turn).
 */
const STEADY_FROM = 13;
/** Turns of the first conversation, from which the daemon learns whether the model's cache shifts. */
const LEARN_TURNS = 13;

type Message = { role: string; content: string | null };

/** The messages each stored turn sent, in order, from the daemon's history file. */
function storedTurns(dbPath: string): Message[][] {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const rows = db.prepare(
      "SELECT messages FROM turns ORDER BY conv, seq",
    ).all() as { messages: string }[];
    return rows.map((row) => JSON.parse(row.messages) as Message[]);
  } finally {
    db.close();
  }
}

/** Tokens of the messages as the server's template renders them, counted by the server. */
async function rendered(
  backend: Backend,
  messages: Message[],
): Promise<number> {
  const template = await backend.json("/apply-template", {
    messages,
    chat_template_kwargs: { enable_thinking: false },
  });
  assert.equal(template.status, 200, JSON.stringify(template.body));
  const prompt = (template.body as { prompt: string }).prompt;
  const tokens = await backend.json("/tokenize", { content: prompt });
  assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
  return (tokens.body as { tokens: unknown[] }).tokens.length;
}

/** Sums of the steady turns: prompt tokens evaluated and the limit. */
interface Cost {
  evaluated: number;
  limit: number;
  turns: number;
}

function costScenario(shift: boolean): Scenario {
  const model = shift
    ? "a model that can shift its cache"
    : "a sliding-window model";
  const target = shift ? 1.2 : 2;
  const id = `/srv/models/tiny-${shift ? "shift" : "swa"}.gguf`;
  return {
    name:
      `prompt tokens per turn over 30 turns, ${model}: within ${target}× the new tokens`,
    real: { role: shift ? "shift" : "swa" },
    fake: {
      options: {
        models: [{ id, shift }],
        defaultScript: reply({ content: words(100) }),
      },
    },
    daemon: {
      config: "thinking = false\ncompact = false\nhistory_turns = 10\n" +
        "[request]\nmax_tokens = 64\n",
    },
    async run({ backend, daemon, client }) {
      // What the daemon learns of a model once and keeps: whether its cache
      // shifts, from the first two moves of the window. Measured is every
      // conversation after that one.
      for (let n = 1; n <= LEARN_TURNS; n++) {
        await turn(client!, { type: "ask", text: `Warming up, turn ${n}` });
      }
      await daemon!.waitForLog(/model prompt cache learnt/);
      await client!.send({ type: "new" });
      await client!.until((event) => event.type === "conversation");
      const events: Received[] = [];
      const evaluated: number[] = [];
      for (let n = 1; n <= TURNS; n++) {
        const seen = await turn(client!, {
          type: "ask",
          text: `Question ${n}: what happens to item ${n} when the list grows?`,
        });
        events.push(...seen);
        const done = seen.find((event) => event.type === "done") as {
          timings?: { prompt_n: number };
        };
        evaluated.push(done.timings?.prompt_n ?? NaN);
      }
      const stored = storedTurns(daemon!.paths.dbPath).slice(LEARN_TURNS);
      assert.equal(stored.length, TURNS, "every turn saved");
      const cost: Cost = { evaluated: 0, limit: 0, turns: 0 };
      for (let n = STEADY_FROM; n <= TURNS; n++) {
        const lastReply = stored[n - 2]!.findLast((m) =>
          m.role === "assistant"
        );
        const question = stored[n - 1]!.find((m) => m.role === "user");
        assert.ok(lastReply && question, `turn ${n}'s messages`);
        cost.limit += await rendered(backend, [lastReply, question]);
        cost.evaluated += evaluated[n - 1]!;
        cost.turns++;
      }
      const perTurn = cost.evaluated / cost.turns;
      const limit = cost.limit / cost.turns;
      report(
        `prompt tokens per turn, turns ${STEADY_FROM}–${TURNS} of ${TURNS}, ${model}, ` +
          `${backend.kind} llama-server: ${perTurn.toFixed(0)} evaluated, ` +
          `limit ${limit.toFixed(0)}: ${(perTurn / limit).toFixed(2)}× ` +
          `(target ≤ ${target}×; every turn: ${evaluated.join(" ")})`,
      );
      return observe(events, { ratio: perTurn / limit });
    },
    check(seen) {
      const turnEvents = [
        "user",
        "state thinking",
        "token…",
        "done truncated_by max_tokens",
        "ctx",
        "state idle",
      ];
      assert.deepEqual(
        seen.events,
        Array.from({ length: TURNS }, () => turnEvents).flat(),
      );
      assert.deepEqual(seen.predicted, Array(TURNS).fill(64));
      const ratio = seen.extra.ratio as number;
      assert.ok(ratio <= target, `${ratio.toFixed(2)}× the limit`);
    },
    same(real, fake) {
      assert.deepEqual(real.events, fake.events);
      assert.deepEqual(real.timings, fake.timings);
      assert.deepEqual(real.predicted, fake.predicted);
      // Each is within the target (checked on its own run); the fake's
      // model of the cache must also come close to what the server did.
      const [r, f] = [real.extra.ratio as number, fake.extra.ratio as number];
      assert.ok(
        Math.abs(r - f) <= 0.2 * r,
        `the fake's ${f.toFixed(2)}× is within 20% of the server's ${
          r.toFixed(2)
        }×`,
      );
    },
  };
}

/** The 30-turn conversations: a model that can shift its cache, then one that cannot. */
export const COST_SCENARIOS: Scenario[] = [
  costScenario(true),
  costScenario(false),
];
