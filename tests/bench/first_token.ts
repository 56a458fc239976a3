/**
 * First-token overhead beside some background work: a daemon subprocess on
 * its own fake llama-server and history, and one ask measured as the stream
 * group measures it (ask written → first token read, less the fake's own
 * time from the request's arrival to its first chunk), stopped after that
 * token so nothing is saved and every ask meets the same conversation.
 */
import { Daemon } from "../support/daemon_harness.ts";
import {
  FakeLlm,
  type FakeLlmOptions,
  type RecordedRequest,
} from "../support/fake_llm.ts";
import { BenchClient } from "./bench_client.ts";
import { median, ms, type Row, within } from "./report.ts";
import { stampedReply } from "./stream_bench.ts";

/** A daemon subprocess, its fake llama-server and a connected client. */
export interface Side extends AsyncDisposable {
  llm: FakeLlm;
  daemon: Daemon;
  client: BenchClient;
  /** The added times measured on this side. */
  added: number[];
}

/** How a side is started. */
export interface SideOptions {
  llm?: FakeLlmOptions;
  /** TOML appended to the daemon's config. */
  config: string;
  /** A home laid beforehand (a history); removed with the side. */
  home?: string;
  /** Turns asked and finished before any measurement. */
  warmups: number;
  /** Sees the client's events from its first one on. */
  watch?: (client: BenchClient) => void;
}

/** Starts a fake llama-server and a daemon subprocess, connects, and asks the warm-up turns. */
export async function startSide(options: SideOptions): Promise<Side> {
  const llm = await FakeLlm.start(options.llm ?? {});
  const daemon = await Daemon.start({
    llmUrl: llm.url,
    config: options.config,
    ...(options.home === undefined ? {} : { home: options.home }),
  });
  const client = await BenchClient.connect(daemon.paths.socketPath);
  options.watch?.(client);
  await within(client.wait((e) => e.type === "hello"), "hello");
  for (let n = 1; n <= options.warmups; n++) {
    const idle = client.wait((e) => e.type === "state" && e.state === "idle");
    await client.send({ type: "ask", text: `Warm-up question ${n}` });
    await within(idle, "a warm-up turn");
  }
  const home = options.home;
  return {
    llm,
    daemon,
    client,
    added: [],
    async [Symbol.asyncDispose]() {
      await client.close();
      await daemon[Symbol.asyncDispose]();
      await llm[Symbol.asyncDispose]();
      if (home !== undefined) await Deno.remove(home, { recursive: true });
    },
  };
}

/** One ask, stopped after its first token: the daemon's added time to that token, and the ask's request, picked by `own` among those the fake saw since. */
export async function askTimed(
  side: Pick<Side, "llm" | "client">,
  own: (request: RecordedRequest) => boolean = () => true,
): Promise<{ added: number; request: RecordedRequest }> {
  const { llm, client } = side;
  let firstSent = 0;
  llm.enqueue(stampedReply(1_000_000, 5, (at) => firstSent = at));
  const index = llm.chats.length;
  const first = client.wait((e) => e.type === "token");
  const written = await client.send({ type: "ask", text: "And then?" });
  const { at } = await within(first, "the first token");
  const done = client.wait((e) => e.type === "done");
  await client.send({ type: "stop" });
  await within(done, "done after stop");
  const request = llm.chats.slice(index).find(own);
  if (request === undefined) throw new Error("The ask's request is missing");
  return { added: at - written - (firstSent - request.at), request };
}

/** One ask, stopped after its first token: the daemon's added time to that token; `own` picks the ask's request among those the fake saw since. */
export async function askOnce(
  side: Pick<Side, "llm" | "client">,
  own?: (request: RecordedRequest) => boolean,
): Promise<number> {
  return (await askTimed(side, own)).added;
}

/** A row comparing the added first-token time of a busy side with a quiet one. */
export function comparedRow(
  fields: { id: string; figure: string; quiet: string; target: number },
  busy: readonly number[],
  quiet: readonly number[],
  smoke: boolean,
): Row {
  const difference = median(busy) - median(quiet);
  return {
    id: fields.id,
    figure: fields.figure,
    value: `${ms(median(busy))} (${difference >= 0 ? "+" : "−"}${
      ms(Math.abs(difference))
    })`,
    reference: `${fields.quiet}: ${ms(median(quiet))}`,
    ratio: "—",
    target: `at most ${fields.target} ms more`,
    met: smoke ? null : difference <= fields.target,
  };
}
