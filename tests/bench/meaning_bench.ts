/**
 * Search by meaning beside a reply: the first-token overhead of a question
 * asked while the daemon works through its indexing backlog (a generated
 * history without vectors, an embedding server answering each batch of
 * 768-dimension vectors after a short delay), against the same question on
 * a daemon whose backlog is through. Both are the real daemon subprocess
 * with its derived flags, each on its own copy of the history, its own fake
 * llama-server for chat and its own for embeddings.
 */
import { FakeLlm } from "../support/fake_llm.ts";
import type { BenchClient, BenchEvent } from "./bench_client.ts";
import { layHistory } from "./contention_bench.ts";
import { askOnce, comparedRow, type Side, startSide } from "./first_token.ts";
import { historyFile } from "./history_bench.ts";
import { Random } from "./history_gen.ts";
import {
  count,
  type GroupResult,
  ms,
  progress,
  type Row,
  type Section,
  within,
} from "./report.ts";

/** Sizes of the meaning runs. */
export interface MeaningSizes {
  /** Turns of the history whose backlog runs. */
  turns: number;
  /** Asks timed each way. */
  asks: number;
  /** Milliseconds the busy side's embedding server takes per batch. */
  batchMs: number;
}

/** Full and smoke sizes. */
export const MEANING_SIZES: Record<"full" | "smoke", MeaningSizes> = {
  full: { turns: 5000, asks: 20, batchMs: 50 },
  smoke: { turns: 400, asks: 2, batchMs: 20 },
};

/** What the meaning group needs to know. */
export interface MeaningOptions {
  seed: number;
  cacheDir?: string;
  mode: "full" | "smoke";
}

/** The dimension of the vectors, as the targets of search by meaning name. */
const DIMENSION = 768;
/** The embedding model's name, as the server reports it. */
const EMBED_MODEL = "embed-768";

/** A pool of unit vectors as JSON, made once: a text's vector is picked by its hash. */
function vectorPool(size: number): string[] {
  const random = new Random(768);
  return Array.from({ length: size }, () => {
    const vector = Array.from({ length: DIMENSION }, () => random.next() - 0.5);
    const norm = Math.hypot(...vector);
    return JSON.stringify(vector.map((x) => x / norm));
  });
}

function hash(text: string): number {
  let state = 2166136261;
  for (let i = 0; i < text.length; i += 7) {
    state = Math.imul(state ^ text.charCodeAt(i), 16777619) >>> 0;
  }
  return state;
}

/** An embedding server: its fake, and a way to wait for its next batch. */
interface EmbedServer extends AsyncDisposable {
  url: string;
  /** Resolves when the next embeddings request arrives. */
  nextBatch(): Promise<void>;
  /** Embeddings requests so far. */
  batches: number;
}

async function embedServer(delayMs: number): Promise<EmbedServer> {
  const llm = await FakeLlm.start({
    models: [{ id: "/srv/models/embed.gguf", nCtx: 2048, embeddings: true }],
  });
  const pool = vectorPool(256);
  let waiting: PromiseWithResolvers<void> | null = null;
  const server: EmbedServer = {
    url: llm.url,
    batches: 0,
    nextBatch() {
      waiting = Promise.withResolvers<void>();
      return waiting.promise;
    },
    async [Symbol.asyncDispose]() {
      await llm[Symbol.asyncDispose]();
    },
  };
  llm.override("/v1/embeddings", async (_request, record) => {
    server.batches++;
    waiting?.resolve();
    waiting = null;
    const input = (record.body as { input?: unknown } | undefined)?.input;
    const texts = Array.isArray(input) ? input.map(String) : [String(input)];
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    const data = texts.map((text, index) =>
      `{"embedding":${
        pool[hash(text) % pool.length]
      },"index":${index},"object":"embedding"}`
    );
    return new Response(
      `{"model":"${EMBED_MODEL}","object":"list","usage":{"prompt_tokens":0,"total_tokens":0},"data":[${
        data.join(",")
      }]}`,
      { headers: { "Content-Type": "application/json; charset=utf-8" } },
    );
  });
  return server;
}

/** Where a side's indexing stands, from its `indexing` events. */
interface Indexing {
  done: number;
  total: number;
  /** Whether the final report (`done` equal to `total`) came. */
  over: boolean;
  finished: PromiseWithResolvers<void>;
}

function watchIndexing(indexing: Indexing): (client: BenchClient) => void {
  return (client) => {
    client.on((event: BenchEvent) => {
      const hello = event.type === "hello"
        ? event.indexing as { done: number; total: number } | undefined
        : undefined;
      const seen = event.type === "indexing"
        ? event as unknown as { done: number; total: number }
        : hello;
      if (seen === undefined) return;
      indexing.done = seen.done;
      indexing.total = seen.total;
      if (event.type === "indexing" && seen.done === seen.total) {
        indexing.over = true;
        indexing.finished.resolve();
      }
    });
  };
}

async function side(
  source: string,
  embed: EmbedServer,
  indexing: Indexing,
): Promise<Side> {
  return await startSide({
    config: `embed_url = ${JSON.stringify(embed.url)}\n`,
    home: await layHistory(source),
    warmups: 2,
    watch: watchIndexing(indexing),
  });
}

function newIndexing(): Indexing {
  return {
    done: 0,
    total: 0,
    over: false,
    finished: Promise.withResolvers<void>(),
  };
}

/** Milliseconds a daemon with `embed_url` set may go without asking its embedding server before the figure is left unmeasured. */
const SILENCE_MS = 10_000;

function figure(turns: number, batchMs: number): string {
  return `first-token overhead while the indexing backlog runs (${
    count(turns)
  } turns without vectors, ${DIMENSION}-dimension vectors, ${batchMs} ms a batch at the embedding server), against after it is through`;
}

/** The row when the daemon, `embed_url` set, asked its embedding server nothing: no backlog ran to measure beside. */
function notIndexing(
  turns: number,
  sizes: MeaningSizes,
  smoke: boolean,
): GroupResult {
  return {
    rows: [{
      id: "meaning.first_token",
      figure: figure(turns, sizes.batchMs),
      value: `not measured: no indexing ran (no embeddings request in ${
        SILENCE_MS / 1000
      } s, no indexing event)`,
      reference: "—",
      ratio: "—",
      target: "at most 5 ms more",
      met: smoke ? null : false,
    }],
    sections: [],
  };
}

/** Runs the meaning figures. */
export async function meaningBenchmarks(
  options: MeaningOptions,
  smoke: boolean,
): Promise<GroupResult> {
  const sizes = MEANING_SIZES[options.mode];
  const file = historyFile({ ...options, turns: sizes.turns });
  progress(
    `meaning: first token while indexing ${
      count(file.turns)
    } turns runs, against after it is through, ${sizes.asks} asks`,
  );
  // The quiet side first, through its backlog before anything is timed.
  await using quietEmbed = await embedServer(0);
  const quietIndexing = newIndexing();
  await using quiet = await side(file.path, quietEmbed, quietIndexing);
  const started = performance.now();
  // A daemon that never asks its embedding server has nothing to measure.
  const first = await Promise.race([
    quietEmbed.nextBatch().then(() => true),
    quietIndexing.finished.promise.then(() => true),
    new Promise<false>((resolve) => setTimeout(resolve, SILENCE_MS, false)),
  ]);
  if (!first && quietEmbed.batches === 0) {
    return notIndexing(file.turns, sizes, smoke);
  }
  await within(quietIndexing.finished.promise, "the quiet side's backlog");
  const through = performance.now() - started;
  await using busyEmbed = await embedServer(sizes.batchMs);
  const busyIndexing = newIndexing();
  await using busy = await side(file.path, busyEmbed, busyIndexing);
  const random = new Random(options.seed + 7);
  const batchesBefore = busyEmbed.batches;
  for (let i = 0; i < sizes.asks + 2; i++) {
    // Asked at any moment of a batch: while the server works on it, or
    // while its answer is read and the vectors are written.
    await within(busyEmbed.nextBatch(), "an embedding batch");
    const wait = random.next() * (sizes.batchMs + 10);
    await new Promise((resolve) => setTimeout(resolve, wait));
    const b = await askOnce(busy);
    if (busyIndexing.over) {
      throw new Error(
        "The backlog was through before the asks were: make the history larger",
      );
    }
    const q = await askOnce(quiet);
    if (i < 2) continue;
    busy.added.push(b);
    quiet.added.push(q);
  }
  const row: Row = comparedRow(
    {
      id: "meaning.first_token",
      figure: figure(file.turns, sizes.batchMs),
      quiet: "backlog through",
      target: 5,
    },
    busy.added,
    quiet.added,
    smoke,
  );
  const section: Section = {
    title: "Search by meaning: a question while the backlog runs",
    body:
      `Two daemons, each on its own copy of a generated history of ${
        count(file.turns)
      } turns without vectors and config \`embed_url\` naming its own fake embedding server (a model with \`embeddings: true\`, its \`/v1/embeddings\` answering ${DIMENSION}-dimension vectors). ` +
      `The quiet one worked through its backlog first (${
        ms(through)
      }, the server answering at once). The busy one's server answers each batch after ${sizes.batchMs} ms; ` +
      `each timed question was asked at a random moment 0–${
        sizes.batchMs + 10
      } ms after a batch request arrived, so some land while the server works and some while the answer is read and the vectors written. ` +
      `${
        busyEmbed.batches - batchesBefore
      } batch requests reached the busy server during the asks (the question aborts the one in flight; it is sent again after the reply); ` +
      `its backlog stood at ${count(busyIndexing.done)} of ${
        count(busyIndexing.total)
      } at the last report. The first two asks of each side are not counted.`,
  };
  return { rows: [row], sections: [section] };
}
