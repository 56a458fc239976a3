/**
 * Files with a question: what a follow-up after a turn with a long text
 * file costs the server (the file stays in the cached prefix), read from
 * the fake llama-server's model of its prompt cache; the daemon's own time
 * from an `ask` with a 700 KB file to its chat request reaching the fake,
 * against the same ask without files (the real daemon subprocess, real
 * sockets); and search over a history with attached text
 * (files_search.ts).
 */
import { LocalDaemon } from "../support/assistant_harness.ts";
import { Daemon } from "../support/daemon_harness.ts";
import {
  askedQuestion,
  chunk,
  countTokens,
  FakeLlm,
  type RecordedRequest,
  reply,
} from "../support/fake_llm.ts";
import { promptTokens } from "../support/fake_llm_context.ts";
import { isIdle } from "../support/socket_client.ts";
import { BenchClient } from "./bench_client.ts";
import { fileOfTokens, fileText } from "./file_text.ts";
import { searchWithFiles } from "./files_search.ts";
import { Random } from "./history_gen.ts";
import {
  count,
  type GroupResult,
  median,
  ms,
  percentile,
  progress,
  ratio,
  type Row,
  type Section,
  within,
} from "./report.ts";

/** Sizes of the files runs. */
export interface FilesSizes {
  /** Tokens (the fake's) of the text file of the follow-up figure. */
  fileTokens: number;
  /** Follow-up questions asked after the turn with the file. */
  followUps: number;
  /** Bytes of the file of the ask figure. */
  fileBytes: number;
  /** Asks timed with the file, and as many without. */
  asks: number;
  /** Rounds over the search mix (after a warm-up round). */
  searchRounds: number;
}

/** Full and smoke sizes. */
export const FILES_SIZES: Record<"full" | "smoke", FilesSizes> = {
  full: {
    fileTokens: 20_000,
    followUps: 3,
    fileBytes: 700_000,
    asks: 40,
    searchRounds: 10,
  },
  smoke: {
    fileTokens: 2_000,
    followUps: 1,
    fileBytes: 70_000,
    asks: 2,
    searchRounds: 2,
  },
};

/** What the files group needs to know. */
export interface FilesOptions {
  seed: number;
  turns: number;
  cacheDir?: string;
  mode: "full" | "smoke";
}

const encoder = new TextEncoder();

/** One text file as `ask` carries it. */
function attachment(name: string, text: string) {
  return { name, mime: "text/plain", data: encoder.encode(text).toBase64() };
}

/**
 * The limit of a turn's request: its question and the reply before it as
 * this request renders them (the rule of the prompt group), without the
 * tool schemas, which sit in the cached system message.
 */
function limitOf(body: Record<string, unknown>): number {
  const { tools: _, ...rest } = body;
  const messages = body.messages as { role: string; content: string }[];
  const question = messages.at(-1)!;
  const before = messages.at(-2);
  const tail = before?.role === "assistant" ? [before] : [];
  return promptTokens({
    ...rest,
    messages: [...tail, { ...question, content: askedQuestion(body) }],
  });
}

/** Prompt tokens the server evaluated for a request (`timings.prompt_n`). */
function evaluated(request: RecordedRequest): number {
  return request.cache?.promptN ?? 0;
}

async function followUp(
  sizes: FilesSizes,
  seed: number,
  smoke: boolean,
): Promise<{ row: Row; section: Section }> {
  progress(
    `files: follow-ups after a turn with a ${
      count(sizes.fileTokens)
    }-token text file`,
  );
  const model = "/srv/models/shifts.gguf";
  await using llm = await FakeLlm.start({
    models: [{ id: model, nCtx: 65_536, shift: true }],
    defaultScript: reply({
      content: Array.from({ length: 64 }, (_, i) => ` w${i % 97}`),
    }),
  });
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  const text = fileOfTokens(new Random(seed + 31), sizes.fileTokens);
  const first = llm.chats.length;
  await client.send({
    type: "ask",
    text: "Here is the server's log: what went wrong?",
    files: [attachment("server.log", text)],
  });
  await within(client.until(isIdle), "the turn with the file");
  // As a person reads the reply first: its side requests (the title) run.
  await within(daemon.assistant.settled(), "the side requests after it");
  const fileTurn = evaluated(llm.chats[first]!);
  const lines: string[] = [];
  let own = 0;
  let all = 0;
  let limit = 0;
  for (let n = 1; n <= sizes.followUps; n++) {
    const from = llm.chats.length;
    await client.send({
      type: "ask",
      text: `Follow-up ${n}: which host failed most, and why?`,
    });
    await within(client.until(isIdle), `follow-up ${n}`);
    await within(daemon.assistant.settled(), `the side requests after ${n}`);
    const requests = llm.chats.slice(from);
    const request = requests[0]!;
    const mine = evaluated(request);
    const sum = requests.reduce((s, r) => s + evaluated(r), 0);
    const bound = limitOf(request.body as Record<string, unknown>);
    if (n === 1) {
      own = mine;
      all = sum;
      limit = bound;
    }
    lines.push(
      `| ${n} | ${count(mine)} | ${count(sum - mine)} | ${count(bound)} | ${
        count(request.cache?.cacheN ?? 0)
      } | ${ratio(sum / bound)} |`,
    );
  }
  const value = all / limit;
  const row: Row = {
    id: "files.follow_up",
    figure:
      `prompt tokens evaluated by a follow-up question after a turn with a ${
        count(sizes.fileTokens)
      }-token text file, a model that can shift its cache (side requests counted in)`,
    value: `${count(all)} tokens${
      all === own ? "" : ` (its own request ${count(own)})`
    }`,
    reference: `limit ${
      count(limit)
    } tokens (the question and the reply before it); the turn with the file: ${
      count(fileTurn)
    }`,
    ratio: ratio(value),
    target: "≤ 1.2× the limit",
    met: smoke ? null : value <= 1.2,
  };
  const section: Section = {
    title: "Files: follow-ups after a long text file",
    body: [
      `One conversation on the fake llama-server (a model whose cache shifts, 65,536-token context, 64-token replies): ` +
      `a question with \`server.log\` attached (${
        count(countTokens(text))
      } of the fake's tokens of log lines; the turn evaluated ${
        count(fileTurn)
      } prompt tokens), then ${sizes.followUps} follow-up question${
        sizes.followUps === 1 ? "" : "s"
      }, each asked once the side requests of the turn before had run. ` +
      "The limit is the question and the reply before it as the request renders them; the row is the first follow-up.\n",
      "| follow-up | its request evaluated | side requests evaluated | limit | reused from the cache | ratio |",
      "| --- | --- | --- | --- | --- | --- |",
      ...lines,
    ].join("\n"),
  };
  return { row, section };
}

/** One timed ask: ask written → the chat request read whole by the fake. */
interface Sent {
  ms: number;
  /** Other requests the fake answered meanwhile. */
  between: string[];
  messages: number;
}

const SSE = { "Content-Type": "text/event-stream" };

/**
 * A chat answer of one token, then held until the client goes: the fake's
 * own chat route reads the prompt's tokens (for its cache), which it
 * cannot for a text of some 100,000 of its tokens and more, a limit of its
 * tokenizer, not of llama-server.
 */
function heldAnswer(_request: Request, record: RecordedRequest): Response {
  const context = {
    body: record.body as Record<string, unknown>,
    model: "/srv/models/tiny.gguf",
    includeUsage: false,
    id: "chatcmpl-bench",
    created: Math.floor(Date.now() / 1000),
    promptTokens: 0,
    room: Infinity,
  };
  // Open until the daemon goes away: the server then cancels the stream.
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(
        encoder.encode(chunk(context, { role: "assistant", content: null })),
      );
      controller.enqueue(encoder.encode(chunk(context, { content: "Look" })));
    },
  });
  return new Response(body, { headers: SSE });
}

async function askUntilSent(
  llm: FakeLlm,
  client: BenchClient,
  files: unknown[] | null,
): Promise<Sent> {
  const index = llm.chats.length;
  const requests = llm.requests.length;
  const first = client.wait((e) => e.type === "token");
  const written = await client.send({
    type: "ask",
    text: "What went wrong here?",
    ...(files === null ? {} : { files }),
  });
  await within(first, "the first token");
  const done = client.wait((e) => e.type === "done");
  await client.send({ type: "stop" });
  await within(done, "done after stop");
  const request = llm.chats[index]!;
  const between = llm.requests.slice(requests).filter((r) =>
    r !== request && r.at <= request.at
  ).map((r) => `${r.method} ${r.url.pathname}`);
  const messages = (request.body as { messages: unknown[] }).messages.length;
  return { ms: request.at - written, between, messages };
}

async function askWithFile(
  sizes: FilesSizes,
  seed: number,
  smoke: boolean,
): Promise<{ row: Row; section: Section }> {
  progress(
    `files: ask with a ${
      count(sizes.fileBytes)
    }-byte file → request, ${sizes.asks} asks each way`,
  );
  // A context that holds the file (≈ 1 token per 4.5 bytes of log lines).
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 1 << 20 }],
  });
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await BenchClient.connect(daemon.paths.socketPath);
  await within(client.wait((e) => e.type === "hello"), "hello");
  for (let n = 1; n <= 2; n++) {
    const idle = client.wait((e) => e.type === "state" && e.state === "idle");
    await client.send({ type: "ask", text: `Warm-up question ${n}` });
    await within(idle, "a warm-up turn");
  }
  llm.override("/v1/chat/completions", heldAnswer);
  const text = fileText(new Random(seed + 37), sizes.fileBytes);
  const files = [attachment("server.log", text)];
  const line = JSON.stringify({ type: "ask", text: "", files }).length;
  const plain: Sent[] = [];
  const filed: Sent[] = [];
  for (let i = 0; i < sizes.asks + 3; i++) {
    const a = await askUntilSent(llm, client, null);
    const b = await askUntilSent(llm, client, files);
    // The first three of each warm the paths up.
    if (i < 3) continue;
    plain.push(a);
    filed.push(b);
  }
  const counts = new Set([...plain, ...filed].map((s) => s.messages));
  const kept = (sent: Sent[]) => new Set(sent.map((s) => s.messages)).size;
  if (kept(plain) !== 1 || kept(filed) !== 1) {
    throw new Error("A stopped ask was kept: the requests grew");
  }
  const base = median(plain.map((s) => s.ms));
  const added = filed.map((s) => s.ms - base);
  const p50 = percentile(added, 50);
  const p95 = percentile(added, 95);
  const between = [...new Set([...plain, ...filed].flatMap((s) => s.between))];
  const bytes = (llm.chats.at(-1)?.text.length ?? 0) -
    (llm.chats.at(-2)?.text.length ?? 0);
  const row: Row = {
    id: "files.ask",
    figure: `the daemon's own time from an ask with a ${
      count(sizes.fileBytes)
    }-byte text file to its chat request read by the server, less the same ask without files: p50 / p95 (${sizes.asks} asks each)`,
    value: `${ms(p50)} / ${ms(p95)}`,
    reference: `without files ${ms(base)}; with ${
      ms(median(filed.map((s) => s.ms)))
    } (p50)`,
    ratio: "—",
    target: "p95 ≤ 20 ms",
    met: smoke ? null : p95 <= 20,
  };
  const section: Section = {
    title: "Files: an ask with a large text file",
    body:
      `Each ask is timed from the moment its line was written to the daemon's socket (${
        count(line)
      } bytes with the file in base64) to the moment the fake llama-server had read its chat request whole (${
        count(bytes)
      } bytes more than without the file), and stopped after its first token so nothing is saved (the requests carried ${
        [...counts].join(" and ")
      } messages throughout). Asks with and without the file alternate; the first three of each are not counted. ` +
      `Without files: p50 ${ms(base)}, p95 ${
        ms(percentile(plain.map((s) => s.ms), 95))
      }; with: p50 ${ms(median(filed.map((s) => s.ms)))}, p95 ${
        ms(percentile(filed.map((s) => s.ms), 95))
      }. The row is each ask with the file less the median without. ` +
      `Both include the socket and HTTP transfers of the bytes (the fake reads the body before it stamps the request). ` +
      "The timed asks are answered with one token, held until the stop: the fake's own chat route tokenizes the prompt for its cache, which its tokenizer cannot do for a text of about 100,000 of its tokens and more (it answers 500). " +
      (between.length === 0
        ? "No other request reached the fake in between."
        : `Other requests that reached the fake in between: ${
          between.map((r) => `\`${r}\``).join(", ")
        }.`),
  };
  return { row, section };
}

/** Runs the files figures. */
export async function filesBenchmarks(
  options: FilesOptions,
  smoke: boolean,
): Promise<GroupResult> {
  const sizes = FILES_SIZES[options.mode];
  const follow = await followUp(sizes, options.seed, smoke);
  const ask = await askWithFile(sizes, options.seed, smoke);
  const search = await searchWithFiles(options, sizes.searchRounds, smoke);
  return {
    rows: [follow.row, ask.row, search.row],
    sections: [follow.section, ask.section, search.section],
  };
}
