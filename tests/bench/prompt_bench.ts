/**
 * What a turn costs the server: the prompt tokens llama-server evaluates
 * each turn of a 30-turn conversation in steady state, against the limit a
 * perfect cache leaves (the new question plus the last reply as the template
 * renders it again), read from the fake llama-server's model of the prompt
 * cache. Short replies with the ten-turn window and long ones bounded by a
 * 4,096-token context, for a model whose cache can shift and one whose cache
 * cannot, with `compact` off and on; what a summary costs per block; and the
 * first token of a question asked while a summary is being made.
 */
import { LocalDaemon } from "../support/assistant_harness.ts";
import {
  askedQuestion,
  FakeLlm,
  type RecordedRequest,
  reply,
  type Script,
} from "../support/fake_llm.ts";
import { promptTokens } from "../support/fake_llm_context.ts";
import { isIdle } from "../support/socket_client.ts";
import {
  type GroupResult,
  median,
  ms,
  progress,
  ratio,
  type Row,
  within,
} from "./report.ts";
import { askOnce, type Side, startSide } from "./first_token.ts";

/** Sizes of the prompt runs. */
export interface PromptSizes {
  /** Turns of each conversation. */
  turns: number;
  /**
   * The first turn of the steady state: once the window is full, and so that
   * the turns measured are whole blocks of a window that moves in blocks
   * (ten turns, half of them kept: a move every sixth turn, at 12, 18, 24
   * and 30; turns 13–30 hold three moves, as any 18 turns do on average).
   */
  steadyFrom: number;
  /** Asks timed for the first-token figure. */
  asks: number;
}

/** Full and smoke sizes. */
export const PROMPT_SIZES: Record<"full" | "smoke", PromptSizes> = {
  full: { turns: 30, steadyFrom: 13, asks: 20 },
  smoke: { turns: 13, steadyFrom: 12, asks: 2 },
};

/**
 * The summary the fake writes: about 130 of its tokens, what six short turns
 * come to. Each block costs the server the summary once (in the question
 * that carries it) and the instruction once (in the summary request).
 */
const SUMMARY = Array.from(
  { length: 10 },
  (_, i) => ` The user asked about item ${i} and was answered.`,
).join("");

function isSummaryRequest(body: unknown): boolean {
  const messages = (body as { messages: { content: string | null }[] })
    .messages;
  return (messages.at(-1)?.content ?? "").startsWith(
    "Summarise this conversation",
  );
}

/** Answers questions with `pieces` words and summary requests with SUMMARY. */
function answering(pieces: number): Script {
  return {
    steps(context) {
      const script = isSummaryRequest(context.body)
        ? reply({ content: SUMMARY.match(/.{1,5}/gs) ?? [] })
        : reply({
          content: Array.from({ length: pieces }, (_, i) => ` w${i % 97}`),
        });
      if (!("steps" in script)) throw new TypeError("a script with steps");
      return script.steps(context);
    },
  };
}

/** One conversation's kind. */
interface Kind {
  name: "short" | "long";
  /** Reply pieces (the fake's tokens). */
  pieces: number;
  nCtx: number;
  shift: boolean;
  compact: boolean;
}

/** What a conversation cost in steady state. */
interface Cost {
  /** Prompt tokens evaluated: the turns' own requests and the summaries made after them. */
  evaluated: number;
  /** The limit summed over the same turns. */
  limit: number;
  turns: number;
  summaries: RecordedRequest[];
  /** The turns' own requests' prompt tokens, summed. */
  own: number;
}

/**
 * The limit of a turn's request: its question and the reply before it as
 * this request renders them (the summary a question may carry left out: it
 * is what compaction costs).
 */
function limitOf(body: Record<string, unknown>): number {
  const messages = body.messages as { role: string; content: string }[];
  const question = messages.at(-1)!;
  const before = messages.at(-2);
  const tail = before?.role === "assistant" ? [before] : [];
  // The question and the last reply alone: the tool schemas are part of the
  // cached start, not of a turn's new tokens.
  const { tools: _tools, ...rest } = body;
  return promptTokens({
    ...rest,
    messages: [...tail, { ...question, content: askedQuestion(body) }],
  });
}

async function conversation(kind: Kind, sizes: PromptSizes): Promise<Cost> {
  const model = `/srv/models/${kind.shift ? "shifts" : "swa"}.gguf`;
  await using llm = await FakeLlm.start({
    models: [{ id: model, nCtx: kind.nCtx, shift: kind.shift }],
    defaultScript: answering(kind.pieces),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: `history_turns = 10\ncompact = ${kind.compact}\n`,
  });
  // What the daemon learns of a model once and keeps (the first window
  // move of its first conversation, one extra read): known here, as in every
  // conversation after that one.
  daemon.store.setCacheShift(model, kind.shift);
  await using client = await daemon.connect();
  await client.next("hello");
  const cost: Cost = {
    evaluated: 0,
    limit: 0,
    turns: 0,
    summaries: [],
    own: 0,
  };
  for (let n = 1; n <= sizes.turns; n++) {
    const first = llm.chats.length;
    await client.send({
      type: "ask",
      text: `Question ${n}: what happens to item ${n} when the list grows?`,
    });
    await within(client.until(isIdle), `turn ${n}`);
    // As a person reads the reply first: a summary due is made meanwhile.
    await within(daemon.assistant.settled(), `the summary after turn ${n}`);
    if (n < sizes.steadyFrom) continue;
    cost.turns++;
    for (const request of llm.chats.slice(first)) {
      const evaluated = request.cache?.promptN ?? 0;
      cost.evaluated += evaluated;
      if (isSummaryRequest(request.body)) {
        cost.summaries.push(request);
      } else {
        cost.own += evaluated;
        cost.limit += limitOf(request.body as Record<string, unknown>);
      }
    }
  }
  return cost;
}

/** The target of a kind: the server shifts, 1.2× (1.5× with compaction); it cannot, 2× (2.5×). */
function targetOf(kind: Kind): number {
  return kind.shift ? (kind.compact ? 1.5 : 1.2) : (kind.compact ? 2.5 : 2);
}

async function costRows(sizes: PromptSizes, smoke: boolean): Promise<{
  rows: Row[];
  summaryRow: Row;
}> {
  const rows: Row[] = [];
  let summaryRow: Row | null = null;
  for (const name of ["short", "long"] as const) {
    for (const shift of [true, false]) {
      for (const compact of [false, true]) {
        const kind: Kind = {
          name,
          pieces: name === "short" ? 64 : 400,
          nCtx: name === "short" ? 32_768 : 4096,
          shift,
          compact,
        };
        const label = `${name}.${shift ? "shift" : "noshift"}.${
          compact ? "compact" : "plain"
        }`;
        progress(`prompt: ${sizes.turns}-turn conversation, ${label}`);
        const cost = await conversation(kind, sizes);
        const perTurn = cost.evaluated / cost.turns;
        const limit = cost.limit / cost.turns;
        const value = perTurn / limit;
        const target = targetOf(kind);
        rows.push({
          id: `prompt.${label}`,
          figure:
            `prompt tokens evaluated per turn, turns ${sizes.steadyFrom}–${sizes.turns} of ${sizes.turns}: ${
              name === "short"
                ? "64-token replies, history_turns 10"
                : "400-token replies, a 4,096-token context"
            }, a model that ${
              shift ? "can" : "cannot"
            } shift its cache, compact ${compact ? "on" : "off"}${
              compact ? ` (${cost.summaries.length} summaries, counted in)` : ""
            }`,
          value: `${perTurn.toFixed(0)} tokens`,
          reference: `limit ${limit.toFixed(0)} tokens`,
          ratio: ratio(value),
          target: `≤ ${target}× the limit`,
          met: smoke ? null : value <= target,
        });
        if (name === "short" && shift && compact) {
          const each = cost.summaries.map((r) => r.cache?.promptN ?? 0);
          const own = cost.own / cost.turns;
          const perSummary = each.length === 0
            ? 0
            : each.reduce((a, b) => a + b, 0) / each.length;
          summaryRow = {
            id: "prompt.summary_cost",
            figure:
              "prompt tokens a summary request costs the server (64-token replies, a cache that shifts), against a turn's own request",
            value: `${
              perSummary.toFixed(0)
            } tokens per summary (${each.length})`,
            reference: `a turn's own: ${own.toFixed(0)} tokens`,
            ratio: ratio(perSummary / own),
            target: "≤ 2× a turn's own",
            met: smoke || each.length === 0 ? null : perSummary <= 2 * own,
          };
        }
      }
    }
  }
  return { rows, summaryRow: summaryRow! };
}

/** A daemon subprocess with five turns asked, its fake llama-server holding each summary request `summaryHeld`. */
function side(compact: boolean, summaryHeld: boolean): Promise<Side> {
  return startSide({
    llm: {
      defaultScript: {
        steps(context) {
          // A summary that takes its time: every question of the run comes
          // while one is being written.
          const script = isSummaryRequest(context.body)
            ? reply({
              content: Array.from({ length: 2000 }, () => " word"),
              tokenDelayMs: summaryHeld ? 50 : 0,
            })
            : reply({ content: ["A short answer."] });
          if (!("steps" in script)) throw new TypeError("a script with steps");
          return script.steps(context);
        },
      },
    },
    config: `history_turns = 4\ncompact = ${compact}\n`,
    warmups: 5,
  });
}

/** Waits until a summary request is being answered. */
async function summaryInFlight(llm: FakeLlm): Promise<void> {
  for (;;) {
    const last = llm.chats.at(-1);
    if (last && isSummaryRequest(last.body)) {
      const state = await Promise.race([last.done, Promise.resolve("running")]);
      if (state === "running") return;
    }
    await within(llm.nextChat(), "a summary request");
  }
}

/** One ask, stopped after its first token so nothing is saved: the daemon's added time to that token. */
async function askDuring(side: Side, during: boolean): Promise<number> {
  if (during) await summaryInFlight(side.llm);
  return await askOnce(side, (c) => !isSummaryRequest(c.body));
}

async function duringSummary(sizes: PromptSizes, smoke: boolean): Promise<Row> {
  progress(
    `prompt: first token of a question asked while a summary is made, ${sizes.asks} asks`,
  );
  await using busy = await side(true, true);
  await using quiet = await side(false, false);
  for (let i = 0; i < 2; i++) {
    await askDuring(busy, true);
    await askDuring(quiet, false);
  }
  for (let i = 0; i < sizes.asks; i++) {
    busy.added.push(await askDuring(busy, true));
    quiet.added.push(await askDuring(quiet, false));
  }
  const difference = median(busy.added) - median(quiet.added);
  return {
    id: "prompt.ask_during_summary",
    figure:
      "first-token overhead of a question asked while a summary request runs (it gives way at once), against one asked when none does",
    value: `${ms(median(busy.added))} (${difference >= 0 ? "+" : "−"}${
      ms(Math.abs(difference))
    })`,
    reference: `no summary: ${ms(median(quiet.added))}`,
    ratio: "—",
    target: "the same within 5 ms",
    met: smoke ? null : Math.abs(difference) <= 5,
  };
}

/** Runs the prompt figures. */
export async function promptBenchmarks(
  sizes: PromptSizes,
  smoke: boolean,
): Promise<GroupResult> {
  const { rows, summaryRow } = await costRows(sizes, smoke);
  rows.push(summaryRow, await duringSummary(sizes, smoke));
  return { rows, sections: [] };
}
