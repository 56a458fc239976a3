/**
 * The daemon's streaming figures, through the real daemon subprocess and
 * real sockets: relay throughput, added latency per token, first-token
 * overhead and stop. The fake llama-server and the clients share this
 * process's clock, so the server stamps each chunk and the clients subtract.
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import { Daemon } from "../support/daemon_harness.ts";
import {
  type ChatContext,
  chunk,
  FakeLlm,
  reply,
  type Script,
  type Step,
} from "../support/fake_llm.ts";
import { BenchClient } from "./bench_client.ts";
import {
  type GroupResult,
  max,
  median,
  ms,
  progress,
  ratio,
  type Row,
  showSpread,
  spread,
  within,
} from "./report.ts";

/** Sizes of the streaming runs. */
export interface StreamSizes {
  /** Tokens of the back-to-back stream; 20,000 in a full run. */
  relayTokens: number;
  /** Runs of each relay case; the median is reported. */
  relayRuns: number;
  /** Tokens of the paced stream (200 tokens/s). */
  pacedTokens: number;
  /** Runs of the paced stream; medians of each run's percentiles are reported. */
  pacedRuns: number;
  /** Repeats of the first-token and stop measurements. */
  repeats: number;
}

/** Full and smoke sizes. */
export const STREAM_SIZES: Record<"full" | "smoke", StreamSizes> = {
  full: {
    relayTokens: 20_000,
    relayRuns: 5,
    pacedTokens: 2_000,
    pacedRuns: 3,
    repeats: 20,
  },
  smoke: {
    relayTokens: 500,
    relayRuns: 1,
    pacedTokens: 40,
    pacedRuns: 1,
    repeats: 2,
  },
};

/** Tokens per second of the paced streams. */
export const PACE_TOKENS_PER_SECOND = 200;

/** Words of a plain back-to-back reply, short like real tokens. */
function* plainTokens(count: number): Generator<string> {
  const words = [" the", " file", " is", " in", " memory", ",", " and", " so"];
  for (let i = 0; i < count; i++) yield words[i % words.length]!;
}

/** A reply whose content tokens each carry `performance.now()` at the moment they are sent. */
export function stampedReply(
  tokens: number,
  tokenDelayMs: number,
  onFirst?: (at: number) => void,
): Script {
  return {
    *steps(context: ChatContext): Generator<Step> {
      yield { send: chunk(context, { role: "assistant", content: null }) };
      for (let i = 0; i < tokens; i++) {
        if (tokenDelayMs > 0) yield { delayMs: tokenDelayMs };
        // Evaluated when the stream pulls this chunk: the stamp is the send time.
        const at = performance.now();
        if (i === 0) onFirst?.(at);
        yield { send: chunk(context, { content: ` ${at.toFixed(3)}` }) };
      }
      yield { send: chunk(context, {}, "stop") };
      yield {
        send: chunk(context, null, null, {
          usage: {
            completion_tokens: tokens,
            prompt_tokens: 20,
            total_tokens: tokens + 20,
          },
        }),
      };
      yield { send: "data: [DONE]\n\n" };
    },
  };
}

/** Reads a chat stream straight from the fake, as a bare client would; calls `onToken` per content delta. */
async function readDirect(
  url: string,
  onToken: (content: string, at: number) => void,
): Promise<void> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      model: "tiny",
      messages: [{ role: "user", content: "hello" }],
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  const events = response.body!
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  for await (const event of events) {
    if (event.data === "[DONE]") break;
    const parsed = JSON.parse(event.data) as {
      choices?: { delta?: { content?: string | null } }[];
    };
    const content = parsed.choices?.[0]?.delta?.content;
    if (typeof content === "string") onToken(content, performance.now());
  }
}

async function connectAll(daemon: Daemon, n: number): Promise<BenchClient[]> {
  const clients: BenchClient[] = [];
  for (let i = 0; i < n; i++) {
    const client = await BenchClient.connect(daemon.paths.socketPath);
    const hello = client.wait((event) => event.type === "hello");
    clients.push(client);
    await hello;
  }
  return clients;
}

async function closeAll(clients: BenchClient[]): Promise<void> {
  await Promise.all(clients.map((client) => client.close()));
}

/** One ask through the daemon; resolves with the moment each client read its `count`-th token. */
async function relayOnce(
  llm: FakeLlm,
  clients: BenchClient[],
  tokens: number,
): Promise<{ started: number; last: number[] }> {
  llm.enqueue(reply({ content: plainTokens(tokens) }));
  const last = clients.map(() => 0);
  const finished = clients.map((client, i) => {
    let seen = 0;
    const off = client.on((event, at) => {
      if (event.type === "token") {
        seen++;
        if (seen === tokens) last[i] = at;
      }
    });
    return client.wait((event) => event.type === "done").then(() => off());
  });
  const started = performance.now();
  await clients[0]!.send({ type: "ask", text: "Write a long answer." });
  await within(Promise.all(finished), "every client's done");
  return { started, last };
}

/** Runs the streaming figures against one daemon. */
export async function streamBenchmarks(
  sizes: StreamSizes,
  smoke: boolean,
): Promise<GroupResult> {
  // A context that holds the 20,000-token replies and the history they make.
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 1 << 20 }],
  });
  // The reply path's own figures: no summary of the relay's 20,000-token
  // turns is built while the next question is measured (the prompt group
  // measures a question asked during a summary).
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "compact = false\n",
  });
  const rows: Row[] = [];

  // Relay throughput: direct, 1 client, 16 clients, interleaved per run.
  progress(`relay: ${sizes.relayTokens} tokens × ${sizes.relayRuns} runs`);
  const rates = {
    direct: [] as number[],
    one: [] as number[],
    all: [] as number[],
  };
  // A first turn warms the daemon's model lookup and the code paths.
  {
    const warm = await connectAll(daemon, 1);
    await relayOnce(llm, warm, 100);
    await closeAll(warm);
  }
  for (let run = 0; run < sizes.relayRuns; run++) {
    llm.enqueue(reply({ content: plainTokens(sizes.relayTokens) }));
    let n = 0;
    let lastAt = 0;
    const started = performance.now();
    await readDirect(llm.url, (_, at) => {
      n++;
      lastAt = at;
    });
    rates.direct.push((n * 1000) / (lastAt - started));
    for (const [key, count] of [["one", 1], ["all", 16]] as const) {
      const clients = await connectAll(daemon, count);
      const { started, last } = await relayOnce(
        llm,
        clients,
        sizes.relayTokens,
      );
      rates[key].push((sizes.relayTokens * 1000) / (max(last) - started));
      await closeAll(clients);
    }
  }
  const direct = median(rates.direct);
  for (const [key, count] of [["one", 1], ["all", 16]] as const) {
    const rate = median(rates[key]);
    rows.push({
      id: `relay.${count}`,
      figure: `relay throughput, ${count} client${count > 1 ? "s" : ""} (${
        sizes.relayTokens.toLocaleString("en-US")
      } tokens, slowest client)`,
      value: `${Math.round(rate).toLocaleString("en-US")} tokens/s`,
      reference: `direct SSE read ${
        Math.round(direct).toLocaleString("en-US")
      } tokens/s`,
      ratio: ratio(rate / direct),
      target: count === 16 ? "≥ 0.5× direct" : "—",
      met: smoke ? null : count === 16 ? rate / direct >= 0.5 : null,
    });
  }

  // Added latency per token, paced, 8 clients; the reference is the same stream read directly.
  const delay = 1000 / PACE_TOKENS_PER_SECOND;
  progress(
    `latency: ${sizes.pacedTokens} tokens at 200/s to 8 clients × ${sizes.pacedRuns}`,
  );
  const directRuns: number[][] = [];
  const daemonRuns: number[][] = [];
  for (let run = 0; run < sizes.pacedRuns; run++) {
    const direct: number[] = [];
    llm.enqueue(stampedReply(sizes.pacedTokens, delay));
    await readDirect(llm.url, (content, at) => {
      direct.push(at - Number(content));
    });
    directRuns.push(direct);
    daemonRuns.push(await pacedLatency(daemon, llm, sizes.pacedTokens, 8));
  }
  const latency = spread(daemonRuns);
  rows.push({
    id: "latency.8",
    figure:
      `added latency per token, 200 tokens/s, 8 clients: p50 / p99 / max (median of ${sizes.pacedRuns} runs)`,
    value: showSpread(latency),
    reference: `fake's stamp; direct read ${showSpread(spread(directRuns))}`,
    ratio: "—",
    target: "p99 ≤ 2 ms",
    met: smoke ? null : latency.p99 <= 2,
  });

  // First-token overhead: ask written → first token read, minus the fake's own time to its first chunk.
  progress(`first token: ${sizes.repeats} asks`);
  const totals: number[] = [];
  const owns: number[] = [];
  const added: number[] = [];
  {
    const [client] = await connectAll(daemon, 1);
    for (let i = 0; i < sizes.repeats; i++) {
      let firstSent = 0;
      llm.enqueue(stampedReply(5, 0, (at) => firstSent = at));
      const index = llm.chats.length;
      const first = client!.wait((event) => event.type === "token");
      const done = client!.wait((event) => event.type === "done");
      const written = await client!.send({ type: "ask", text: "Hi there." });
      const { at } = await within(first, "the first token");
      const request = llm.chats[index]!;
      await within(done, "done");
      const own = firstSent - request.at;
      totals.push(at - written);
      owns.push(own);
      added.push(at - written - own);
    }
    await client!.close();
  }
  rows.push({
    id: "first_token",
    figure: "first-token overhead: ask written → first token read",
    value: `${ms(median(totals))} (added ${ms(median(added))})`,
    reference: `fake's own time to its first chunk ${ms(median(owns))}`,
    ratio: "—",
    target: "≤ 5 ms added",
    met: smoke ? null : median(added) <= 5,
  });

  // Stop: stop written → done read, and → the upstream request seen aborted.
  progress(`stop: ${sizes.repeats} stops`);
  const toDone: number[] = [];
  const toAbort: number[] = [];
  {
    const [client] = await connectAll(daemon, 1);
    for (let i = 0; i < sizes.repeats; i++) {
      llm.enqueue(stampedReply(1_000_000, delay));
      const index = llm.chats.length;
      let tokens = 0;
      const fifth = Promise.withResolvers<void>();
      const off = client!.on((event) => {
        if (event.type === "token" && ++tokens === 5) fifth.resolve();
      });
      await client!.send({ type: "ask", text: "Tell me everything." });
      await within(fifth.promise, "five tokens");
      off();
      const request = llm.chats[index]!;
      const done = client!.wait((event) => event.type === "done");
      const written = performance.now();
      await client!.send({ type: "stop" });
      const { at } = await within(done, "done after stop");
      const abortedAt = await within(request.aborted, "the upstream abort");
      toDone.push(at - written);
      toAbort.push(abortedAt - written);
    }
    await client!.close();
  }
  rows.push({
    id: "stop.done",
    figure: "stop: stop written → done read (median / max)",
    value: `${ms(median(toDone))} / ${ms(max(toDone))}`,
    reference: "—",
    ratio: "—",
    target: "≤ 5 ms",
    met: smoke ? null : median(toDone) <= 5,
  });
  rows.push({
    id: "stop.abort",
    figure: "stop: stop written → upstream request seen aborted (median / max)",
    value: `${ms(median(toAbort))} / ${ms(max(toAbort))}`,
    reference: "—",
    ratio: "—",
    target: "≤ 20 ms",
    met: smoke ? null : median(toAbort) <= 20,
  });
  return { rows, sections: [] };
}

/** Streams `tokens` stamped tokens at 200/s to `n` clients; returns every client's latency per token. */
export async function pacedLatency(
  daemon: Daemon,
  llm: FakeLlm,
  tokens: number,
  n: number,
): Promise<number[]> {
  const clients = await connectAll(daemon, n);
  const samples: number[] = [];
  const done = clients.map((client) => {
    const off = client.on((event, at) => {
      if (event.type === "token") {
        samples.push(at - Number(event.delta));
      }
    });
    return client.wait((event) => event.type === "done").then(() => off());
  });
  llm.enqueue(stampedReply(tokens, 1000 / PACE_TOKENS_PER_SECOND));
  await clients[0]!.send({ type: "ask", text: "Stream slowly." });
  await within(Promise.all(done), "every client's done");
  await closeAll(clients);
  return samples;
}
