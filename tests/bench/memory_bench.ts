/**
 * What remembering costs a turn: the prompt tokens llama-server evaluates
 * in a 30-turn conversation that carries 20 memories against one that
 * carries none (read from the fake llama-server's model of its prompt
 * cache; the memories end the system message, so they should cost their
 * tokens once, at the first request), for a model whose cache can shift
 * and one whose cache cannot; and the first-token overhead of a question
 * asked while a proposal request runs (the real daemon subprocess).
 */
import { MEMORY_INTRO } from "../../src/assistant/memory.ts";
import { LocalDaemon } from "../support/assistant_harness.ts";
import {
  countTokens,
  FakeLlm,
  type RecordedRequest,
  reply,
  type Script,
} from "../support/fake_llm.ts";
import { isIdle } from "../support/socket_client.ts";
import { askOnce, comparedRow, type Side, startSide } from "./first_token.ts";
import {
  count,
  type GroupResult,
  progress,
  ratio,
  type Row,
  type Section,
  within,
} from "./report.ts";

/** Sizes of the memory runs. */
export interface MemoriesSizes {
  /** Turns of each conversation. */
  turns: number;
  /** Memories kept before the second conversation. */
  memories: number;
  /** Asks timed for the first-token figure, each way. */
  asks: number;
}

/** Full and smoke sizes. */
export const MEMORIES_SIZES: Record<"full" | "smoke", MemoriesSizes> = {
  full: { turns: 30, memories: 20, asks: 20 },
  smoke: { turns: 4, memories: 3, asks: 2 },
};

/** Short facts, as people let an assistant keep them. */
const FACTS = [
  "Prefers metric units.",
  "The project at work is called Tern.",
  "Lives in Lyon and works from home on Fridays.",
  "Writes code in TypeScript and Rust.",
  "Likes short answers with an example.",
  "Has a cat named Miso.",
  "Runs llama-server on a laptop with 16 GB of memory.",
  "Is learning Italian.",
  "Uses Debian on every machine.",
  "Drinks no coffee after noon.",
  "Her manager is called Priya.",
  "Plans a trip to Lisbon in May.",
  "Prefers dates written as 2026-03-01.",
  "Keeps notes in Markdown files.",
  "Plays the cello on weekends.",
  "Is allergic to peanuts.",
  "Wants sources cited when facts are checked.",
  "Reads replies in a terminal 100 columns wide.",
  "Has two children, Ana and Tomas.",
  "Commutes by train.",
];

/** Answers every request with `pieces` words. */
function answering(pieces: number): Script {
  return reply({
    content: Array.from({ length: pieces }, (_, i) => ` w${i % 97}`),
  });
}

/** What one conversation cost, turn by turn. */
interface Cost {
  /** Prompt tokens evaluated per turn: its own requests and the side requests after it. */
  perTurn: number[];
  /** How many memories its first request carried. */
  carried: number;
  /** The memories' block in the system message, in the fake's tokens. */
  block: number;
}

/** Memories in a request's system message: the lines after MEMORY_INTRO. */
function memoriesOf(request: RecordedRequest): { lines: number; text: string } {
  const messages = (request.body as { messages: { content: string }[] })
    .messages;
  const system = String(messages[0]?.content ?? "");
  const at = system.indexOf(`\n\n${MEMORY_INTRO}`);
  if (at < 0) return { lines: 0, text: "" };
  const text = system.slice(at);
  return {
    lines: text.split("\n").filter((l) => l.startsWith("- ")).length,
    text,
  };
}

async function conversation(
  sizes: MemoriesSizes,
  shift: boolean,
  memories: number,
): Promise<Cost> {
  const model = `/srv/models/${shift ? "shifts" : "swa"}.gguf`;
  await using llm = await FakeLlm.start({
    models: [{ id: model, nCtx: 32_768, shift }],
    defaultScript: answering(64),
  });
  // No proposal runs during the measured turns (memory_idle an hour): the
  // next row measures a proposal's effect on a question.
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: 'memory = "ask"\nmemory_idle = 3600\nhistory_turns = 10\n',
  });
  daemon.store.setCacheShift(model, shift);
  await using client = await daemon.connect();
  await client.next("hello");
  for (const text of FACTS.slice(0, memories)) {
    await client.send({ type: "remember", text });
    await within(
      client.until((e) => e.type === "memories"),
      "the memories after remember",
    );
  }
  const cost: Cost = { perTurn: [], carried: 0, block: 0 };
  for (let n = 1; n <= sizes.turns; n++) {
    const first = llm.chats.length;
    await client.send({
      type: "ask",
      text: `Question ${n}: what happens to item ${n} when the list grows?`,
    });
    await within(client.until(isIdle), `turn ${n}`);
    // As a person reads the reply first: a summary due is made meanwhile.
    await within(daemon.assistant.settled(), `the side requests after ${n}`);
    const requests = llm.chats.slice(first);
    cost.perTurn.push(
      requests.reduce((sum, r) => sum + (r.cache?.promptN ?? 0), 0),
    );
    if (n === 1) {
      const carried = memoriesOf(requests[0]!);
      cost.carried = carried.lines;
      cost.block = carried.text === "" ? 0 : countTokens(carried.text);
    }
  }
  if (cost.carried !== memories) {
    throw new Error(
      `The first request carried ${cost.carried} of ${memories} memories`,
    );
  }
  return cost;
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/** Turns 2–N's tokens with memories against without, per kind of model, and the first turn's extra. */
async function tokenRows(
  sizes: MemoriesSizes,
  smoke: boolean,
): Promise<{ rows: Row[]; section: Section }> {
  const rows: Row[] = [];
  const lines: string[] = [];
  let first: Row | null = null;
  for (const shift of [true, false]) {
    const kind = shift ? "shift" : "noshift";
    progress(
      `memory: two ${sizes.turns}-turn conversations, none and ${sizes.memories} memories, ${kind}`,
    );
    const none = await conversation(sizes, shift, 0);
    const kept = await conversation(sizes, shift, sizes.memories);
    const steadyNone = sum(none.perTurn.slice(1));
    const steadyKept = sum(kept.perTurn.slice(1));
    const value = steadyKept / steadyNone;
    const turns = sizes.turns - 1;
    rows.push({
      id: `memories.steady.${kind}`,
      figure:
        `prompt tokens evaluated per turn, turns 2–${sizes.turns}, a conversation carrying ${sizes.memories} memories against one carrying none (64-token replies, history_turns 10, compact on, side requests counted in), a model that ${
          shift ? "can" : "cannot"
        } shift its cache`,
      value: `${(steadyKept / turns).toFixed(1)} tokens`,
      reference: `no memories: ${(steadyNone / turns).toFixed(1)} tokens`,
      ratio: ratio(value),
      target: "the same (≤ 1.02×)",
      met: smoke ? null : value <= 1.02,
    });
    const extra = kept.perTurn[0]! - none.perTurn[0]!;
    if (shift) {
      first = {
        id: "memories.first",
        figure:
          `prompt tokens the ${sizes.memories} memories add to a conversation's first request (a model that can shift its cache)`,
        value: `+${count(extra)} tokens (${count(kept.perTurn[0]!)} against ${
          count(none.perTurn[0]!)
        })`,
        reference: `the memories' block: ${count(kept.block)} tokens`,
        ratio: ratio(extra / kept.block),
        target: "the block once (≤ 1.02×)",
        met: smoke ? null : extra <= 1.02 * kept.block,
      };
    }
    lines.push(
      ...none.perTurn.map((tokens, i) =>
        `| ${kind} | ${i + 1} | ${count(tokens)} | ${
          count(kept.perTurn[i]!)
        } | ${
          kept.perTurn[i]! === tokens
            ? "="
            : `${kept.perTurn[i]! > tokens ? "+" : "−"}${
              count(Math.abs(kept.perTurn[i]! - tokens))
            }`
        } |`
      ),
    );
  }
  rows.push(first!);
  return {
    rows,
    section: {
      title: "Memories: prompt tokens per turn",
      body: [
        `Two conversations of ${sizes.turns} turns per kind of model, each on its own fake llama-server (one slot, its host-memory cache on) and in-process assistant, config \`memory = "ask"\`, \`memory_idle = 3600\` (no proposal during the turns), \`history_turns = 10\`, compaction on; the second with ${sizes.memories} memories kept by \`remember\` before its first question (its first request carried all of them, within the default \`memory_tokens\` of 300). Each turn counts its own request and the side requests (summaries, the title) that ran after it.\n`,
        "| model | turn | no memories | with memories | difference |",
        "| --- | --- | --- | --- | --- |",
        ...lines,
      ].join("\n"),
    },
  };
}

/** Whether a request is a proposal request: it fixes its answer's shape. */
function isProposal(request: RecordedRequest): boolean {
  return typeof request.body === "object" && request.body !== null &&
    "response_format" in request.body;
}

/** Waits until a proposal request is being answered. */
async function proposalInFlight(side: Side): Promise<void> {
  for (;;) {
    const last = side.llm.chats.at(-1);
    if (last && isProposal(last)) {
      const state = await Promise.race([last.done, Promise.resolve("running")]);
      if (state === "running") return;
    }
    await within(side.llm.nextChat(), "a proposal request");
  }
}

/** A side whose proposal requests take their time (one token a second, up to 300). */
function proposalSide(idle: number): Promise<Side> {
  return startSide({
    llm: {
      defaultScript: {
        steps(context) {
          const script = "response_format" in context.body
            ? reply({
              content: Array.from({ length: 300 }, () => " fact"),
              tokenDelayMs: 1000,
            })
            : reply({ content: ["A short answer."] });
          if (!("steps" in script)) throw new TypeError("a script with steps");
          return script.steps(context);
        },
      },
    },
    config: `memory = "ask"\nmemory_idle = ${idle}\n`,
    warmups: 3,
  });
}

async function duringProposal(sizes: MemoriesSizes, smoke: boolean) {
  progress(
    `memory: first token of a question asked while a proposal request runs, ${sizes.asks} asks`,
  );
  await using busy = await proposalSide(0.05);
  await using quiet = await proposalSide(3600);
  const own = (request: RecordedRequest) => !isProposal(request);
  for (let i = 0; i < sizes.asks + 2; i++) {
    await proposalInFlight(busy);
    const b = await askOnce(busy, own);
    const q = await askOnce(quiet, own);
    if (i < 2) continue;
    busy.added.push(b);
    quiet.added.push(q);
  }
  const proposals = busy.llm.chats.filter(isProposal).length;
  const stray = quiet.llm.chats.filter(isProposal).length;
  if (stray > 0) throw new Error("A proposal ran on the quiet side");
  return comparedRow(
    {
      id: "memories.ask_during_proposal",
      figure:
        `first-token overhead of a question asked while a proposal request runs (it gives way; ${proposals} proposal requests sent), against one asked when none does`,
      quiet: "no proposal",
      target: 5,
    },
    busy.added,
    quiet.added,
    smoke,
  );
}

/** Runs the memory figures. */
export async function memoriesBenchmarks(
  sizes: MemoriesSizes,
  smoke: boolean,
): Promise<GroupResult> {
  const { rows, section } = await tokenRows(sizes, smoke);
  rows.push(await duringProposal(sizes, smoke));
  return { rows, sections: [section] };
}
