/**
 * The context budget's figures: choosing the history of a long conversation
 * (the reply loop's own work, in process), and the first-token overhead of a
 * conversation far over the model's context against one that fits (the real
 * daemon subprocess, real sockets, the fake llama-server holding a 4,096-token
 * context).
 */
import { contentText } from "../../src/llm/chat_types.ts";
import type { ChatMessage } from "../../src/llm/chat_types.ts";
import { ContextPlan } from "../../src/assistant/budget.ts";
import {
  messagesText,
  overheadOf,
  shapeOf,
  TokenLedger,
} from "../../src/assistant/token_ledger.ts";
import { resolvePaths } from "../../src/base/paths.ts";
import { Store } from "../../src/store/store.ts";
import { daemonEnv } from "../support/daemon_harness.ts";
import { countTokens } from "../support/fake_llm.ts";
import { Random, TextGenerator } from "./history_gen.ts";
import {
  type GroupResult,
  median,
  ms,
  percentile,
  progress,
  type Row,
  within,
} from "./report.ts";
import { askTimed, type Side as BaseSide, startSide } from "./first_token.ts";

/** Sizes of the context runs. */
export interface ContextSizes {
  /** Turns of the long conversation. */
  turns: number;
  /** History choices timed. */
  choices: number;
  /** Asks in each conversation for the first-token figure. */
  asks: number;
}

/** Full and smoke sizes. */
export const CONTEXT_SIZES: Record<"full" | "smoke", ContextSizes> = {
  full: { turns: 1000, choices: 2000, asks: 30 },
  smoke: { turns: 50, choices: 20, asks: 2 },
};

/** The long conversation: generated turns, three in four measured as the fake counts them, the rest from before counts were kept. */
function conversation(turns: number, seed: number) {
  const text = new TextGenerator(new Random(seed));
  const history: ChatMessage[][] = [];
  const counts: (number | null)[] = [];
  for (let i = 0; i < turns; i++) {
    const language = text.language();
    const messages: ChatMessage[] = [
      {
        role: "user",
        content: `[2026-03-01 10:00 UTC+01:00] ${text.question(language)}`,
      },
      { role: "assistant", content: text.reply(language) },
    ];
    history.push(messages);
    counts.push(
      i % 4 === 3
        ? null
        : countTokens(messagesText(messages)) + overheadOf(shapeOf(messages)),
    );
  }
  return { history, counts };
}

/** One choice of history, as a reply makes it: the plan and its request. */
function choose(
  ledger: TokenLedger,
  history: readonly ChatMessage[][],
  counts: readonly (number | null)[],
): number {
  const plan = new ContextPlan({
    ledger,
    model: "/srv/models/big.gguf",
    nCtx: 131_072,
    config: { reply_reserve: 1024, request: {}, history_turns: 1000 },
    system: { role: "system", content: "You are a helpful assistant." },
    schemas: [],
    question: { role: "user", content: "[2026-03-01 10:00] And then?" },
    history,
    counts,
    tokenize: undefined,
    signal: AbortSignal.any([]),
  });
  return plan.messages().length;
}

function chooseHistory(sizes: ContextSizes, smoke: boolean): Row {
  progress(`context: choosing the history of ${sizes.turns} turns`);
  const { history, counts } = conversation(sizes.turns, 11);
  const ledger = new TokenLedger();
  // The first choice measures the turns without counts; later ones reuse it.
  const coldStart = performance.now();
  const sent = choose(ledger, history, counts);
  const cold = performance.now() - coldStart;
  const samples: number[] = [];
  for (let i = 0; i < sizes.choices; i++) {
    const start = performance.now();
    choose(ledger, history, counts);
    samples.push(performance.now() - start);
  }
  const p99 = percentile(samples, 99);
  const row: Row = {
    id: "context.choose",
    figure:
      `choosing the history of a ${sizes.turns}-turn conversation (128k context, history_turns 1,000): p50 / p99; first`,
    value: `${ms(percentile(samples, 50))} / ${ms(p99)}; first ${ms(cold)}`,
    reference: `${Math.floor((sent - 2) / 2)} turns chosen`,
    ratio: "—",
    target: "p99 ≤ 1 ms",
    met: smoke ? null : p99 <= 1,
  };
  return row;
}

/** Tokens of history the conversation that fits holds: well inside a 4,096-token context less its reserve. */
const FITS_TOKENS = 2000;

/** Writes a history file in `home` with one conversation of these turns; returns its id. */
function seedHistory(
  home: string,
  history: readonly ChatMessage[][],
  counts: readonly (number | null)[],
): number {
  const env = daemonEnv(home);
  const paths = resolvePaths((name) => env[name]);
  using store = new Store(paths.dbPath);
  let id: number | null = null;
  for (const [i, messages] of history.entries()) {
    id = store.saveTurn(id, {
      user: contentText(messages[0]!.content).replace(/^\[[^\]]*\] /, ""),
      reply: contentText(messages[1]!.content),
      tools: [],
      messages,
      tokens: counts[i] ?? null,
    });
  }
  return id!;
}

/** A daemon on its own history and fake llama-server, its one conversation open. */
interface Side extends BaseSide {
  sent: number;
}

async function side(
  history: readonly ChatMessage[][],
  counts: readonly (number | null)[],
): Promise<Side> {
  const home = await Deno.makeTempDir({ prefix: "da-bench-context-" });
  const id = seedHistory(home, history, counts);
  const started = await startSide({
    llm: { models: [{ id: "/srv/models/tiny.gguf", nCtx: 4096 }] },
    // Every turn may go: only the context limits the history sent.
    config: "history_turns = 1000\n",
    home,
    warmups: 0,
  });
  const { client } = started;
  const opened = client.wait((e) => e.type === "conversation");
  await client.send({ type: "open", id });
  await within(opened, "the conversation");
  return Object.assign(started, { sent: 0 });
}

/** One ask, stopped after its first token so nothing is saved: returns the daemon's added time to that token. */
async function askOnce(side: Side): Promise<number> {
  const { added, request } = await askTimed(side);
  side.sent = historySent(request.body);
  return added;
}

async function firstToken(sizes: ContextSizes, smoke: boolean) {
  progress(
    `context: first token, ${sizes.turns}-turn conversation against a short one, ${sizes.asks} asks each`,
  );
  // Two daemons, so neither reopens a conversation between asks: opening a
  // long one is megabytes of JSON, whose collection is the open's cost.
  const long = conversation(sizes.turns, 12);
  const short = conversation(200, 13);
  let fitting = 0;
  let total = 0;
  for (const messages of short.history) {
    const tokens = countTokens(messagesText(messages)) +
      overheadOf(shapeOf(messages));
    if (total + tokens > FITS_TOKENS) break;
    total += tokens;
    fitting++;
  }
  await using fits = await side(
    short.history.slice(0, fitting),
    short.counts.slice(0, fitting),
  );
  await using over = await side(long.history, long.counts);
  for (let i = 0; i < 3; i++) {
    await askOnce(fits);
    await askOnce(over);
  }
  for (let i = 0; i < sizes.asks; i++) {
    fits.added.push(await askOnce(fits));
    over.added.push(await askOnce(over));
  }
  const refused =
    [fits, over].flatMap((s) => s.llm.chats).filter((c) =>
      c.promptTokens! > 4096
    ).length;
  const difference = median(over.added) - median(fits.added);
  const row: Row = {
    id: "context.first_token",
    figure:
      `first-token overhead, a ${sizes.turns}-turn conversation far over a 4,096-token context (${over.sent} of its turns sent) against one that fits whole`,
    value: `${ms(median(over.added))} (${difference >= 0 ? "+" : "−"}${
      ms(Math.abs(difference))
    })${refused > 0 ? `; ${refused} refused` : ""}`,
    reference: `one that fits: ${
      ms(median(fits.added))
    } (all ${fits.sent} turns sent)`,
    ratio: "—",
    target: "the same within 1 ms, no 400",
    met: smoke ? null : Math.abs(difference) <= 1 && refused === 0,
  };
  return row;
}

/** Earlier turns a chat request carried: its user messages before the question. */
function historySent(body: unknown): number {
  const messages = (body as { messages: { role: string }[] }).messages;
  return messages.filter((m) => m.role === "user").length - 1;
}

/** Runs the context figures. */
export async function contextBenchmarks(
  sizes: ContextSizes,
  smoke: boolean,
): Promise<GroupResult> {
  const rows = [
    chooseHistory(sizes, smoke),
    await firstToken(sizes, smoke),
  ];
  return { rows, sections: [] };
}
