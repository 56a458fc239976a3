/**
 * The browser canvas's figures, through the real daemon, the canvas process
 * with its grants and the page in headless Chromium: tokens per second to
 * the page through the bridge against a client on the daemon's socket, and
 * the page's own work to draw a 2,000-token Markdown reply as it streams.
 * Without Chromium the rows say so instead of a figure.
 */
import type { Page } from "../support/puppeteer.ts";
import { chromiumMissing, TestBrowser } from "../support/browser.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { WebProcess } from "../support/web_harness.ts";
import { BenchClient } from "./bench_client.ts";
import {
  type GroupResult,
  max,
  median,
  ms,
  progress,
  ratio,
  type Row,
  within,
} from "./report.ts";
import { PACE_TOKENS_PER_SECOND } from "./stream_bench.ts";

/** Sizes of the canvas runs. */
export interface WebSizes {
  /** Tokens of the back-to-back stream. */
  relayTokens: number;
  /** Runs of each relay case; medians are reported. */
  relayRuns: number;
  /** Tokens of the paced Markdown reply the page draws. */
  renderTokens: number;
}

/** Full and smoke sizes. */
export const WEB_SIZES: Record<"full" | "smoke", WebSizes> = {
  full: { relayTokens: 10_000, relayRuns: 5, renderTokens: 2_000 },
  smoke: { relayTokens: 300, relayRuns: 1, renderTokens: 40 },
};

/** What the page exposes for measurement (web/app.js `daCanvas.stats`). */
interface PageStats {
  tokens: number;
  lastTokenAt: number;
  frames: number;
  drawMs: number;
  maxDrawMs: number;
  sentAt: Record<string, number>;
}

declare const daCanvas: {
  model: { greeted: boolean; pending: unknown; state: string };
  stats: PageStats;
};

function* plainTokens(count: number): Generator<string> {
  const words = [" the", " file", " is", " in", " memory", ",", " and", " so"];
  for (let i = 0; i < count; i++) yield words[i % words.length]!;
}

/** A reply of `count` tokens that is real Markdown: headings, emphasis, lists, code, tables, links. */
function* markdownTokens(count: number): Generator<string> {
  const document = [
    "## Section\n\n",
    "Some **bold** words, some *emphasis*, `inline code` and a ",
    "[link](https://example.com/page).\n\n",
    "- the first item\n- the second item with `code`\n- the third\n\n",
    "```ts\nconst answer = compute(42);\nconsole.log(answer);\n```\n\n",
    "| key | value |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n\n",
    "> A quoted line to finish the part.\n\n",
  ].join("");
  const pieces = document.match(/\s*\S+|\s+/g)!;
  for (let i = 0; i < count; i++) yield pieces[i % pieces.length]!;
}

async function waitForTokens(page: Page, count: number): Promise<void> {
  await page.waitForFunction(
    (n: number) =>
      daCanvas.stats.tokens >= n && daCanvas.model.pending === null &&
      daCanvas.model.state === "idle",
    { timeout: 120_000, polling: 50 },
    count,
  );
}

/** Asks through the page's own input; resolves to the page's stats once the reply is over. */
async function askInPage(
  page: Page,
  text: string,
  tokens: number,
): Promise<PageStats> {
  const before = await page.evaluate(() => daCanvas.stats.tokens);
  await page.focus("#input");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
  await waitForTokens(page, before + tokens);
  return await page.evaluate(() => structuredClone(daCanvas.stats));
}

function skipped(reason: string, sizes: WebSizes): GroupResult {
  const value = `skipped: ${reason}`;
  return {
    rows: [
      {
        id: "web.relay",
        figure: relayFigure(sizes),
        value,
        reference: "—",
        ratio: "—",
        target: "≥ 0.8× the socket",
        met: null,
      },
      {
        id: "web.render",
        figure: renderFigure(sizes),
        value,
        reference: "—",
        ratio: "—",
        target: "longest draw ≤ 16 ms",
        met: null,
      },
    ],
    sections: [],
  };
}

function relayFigure(sizes: WebSizes): string {
  return `canvas: tokens/s to the page through the bridge (${
    sizes.relayTokens.toLocaleString("en-US")
  } tokens, ask → last token in the page)`;
}

function renderFigure(sizes: WebSizes): string {
  return `canvas: the page's work to draw a ${
    sizes.renderTokens.toLocaleString("en-US")
  }-token Markdown reply streamed at ${PACE_TOKENS_PER_SECOND} tokens/s (draws, frames, longest)`;
}

/** Runs the canvas's figures. */
export async function webBenchmarks(
  sizes: WebSizes,
  smoke: boolean,
): Promise<GroupResult> {
  const missing = chromiumMissing();
  if (missing !== null) {
    progress(`web: ${missing}`);
    return skipped(missing, sizes);
  }
  // A context that holds the long replies: the figure is relaying, not the budget.
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 1 << 20 }],
  });
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using web = await WebProcess.start(
    daemon.paths.socketPath,
    daemon.env.XDG_RUNTIME_DIR!,
  );
  await using browser = await TestBrowser.launch();
  const page = await browser.page(
    web.url + (Deno.env.get("NODRAW") ? "#nodraw" : ""),
  );
  await page.waitForFunction(() => daCanvas.model.greeted, {
    timeout: 30_000,
    polling: 50,
  });
  const rows: Row[] = [];

  // A first turn warms the daemon, the bridge and the page: a page's first
  // Markdown draw also loads its fonts and compiles its renderer, once in
  // its life (tests/bench/NOTES.md).
  llm.enqueue(reply({ content: markdownTokens(100) }));
  await askInPage(page, "Warm up.", 100);

  progress(
    `web relay: ${sizes.relayTokens} tokens × ${sizes.relayRuns} runs, socket and page`,
  );
  const direct: number[] = [];
  const bridged: number[] = [];
  for (let run = 0; run < sizes.relayRuns; run++) {
    {
      await using client = await BenchClient.connect(daemon.paths.socketPath);
      await client.wait((event) => event.type === "hello");
      llm.enqueue(reply({ content: plainTokens(sizes.relayTokens) }));
      let seen = 0;
      let last = 0;
      const off = client.on((event, at) => {
        if (event.type === "token" && ++seen === sizes.relayTokens) last = at;
      });
      const done = client.wait((event) => event.type === "done");
      const written = await client.send({ type: "ask", text: "Long answer." });
      await within(done, "the socket client's done");
      off();
      direct.push((sizes.relayTokens * 1000) / (last - written));
    }
    // The page opens a new conversation each run, so it draws only this reply.
    await page.click("#new");
    llm.enqueue(reply({ content: plainTokens(sizes.relayTokens) }));
    const stats = await within(
      askInPage(page, "Long answer.", sizes.relayTokens),
      "the page's last token",
    );
    bridged.push(
      (sizes.relayTokens * 1000) / (stats.lastTokenAt - stats.sentAt.ask!),
    );
  }
  const socketRate = median(direct);
  const pageRate = median(bridged);
  rows.push({
    id: "web.relay",
    figure: relayFigure(sizes),
    value: `${Math.round(pageRate).toLocaleString("en-US")} tokens/s`,
    reference: `a client on the socket ${
      Math.round(socketRate).toLocaleString("en-US")
    } tokens/s`,
    ratio: ratio(pageRate / socketRate),
    target: "≥ 0.8× the socket",
    met: smoke ? null : pageRate / socketRate >= 0.8,
  });

  progress(`web render: ${sizes.renderTokens} Markdown tokens at 200/s`);
  await page.click("#new");
  // Only this reply's draws count towards the longest.
  await page.evaluate(() => {
    daCanvas.stats.maxDrawMs = 0;
  });
  const before = await page.evaluate(() => structuredClone(daCanvas.stats));
  const metricsBefore = await page.metrics();
  llm.enqueue(
    reply({
      content: markdownTokens(sizes.renderTokens),
      tokenDelayMs: 1000 / PACE_TOKENS_PER_SECOND,
    }),
  );
  const after = await within(
    askInPage(page, "Format a long answer.", sizes.renderTokens),
    "the Markdown reply",
  );
  const metricsAfter = await page.metrics();
  const seconds = (
    key: "ScriptDuration" | "LayoutDuration" | "RecalcStyleDuration",
  ) => (metricsAfter[key] ?? 0) - (metricsBefore[key] ?? 0);
  const mainThread = (seconds("ScriptDuration") + seconds("LayoutDuration") +
    seconds("RecalcStyleDuration")) * 1000;
  const drawMs = after.drawMs - before.drawMs;
  const frames = after.frames - before.frames;
  const longest = after.maxDrawMs;
  const streamMs = (sizes.renderTokens * 1000) / PACE_TOKENS_PER_SECOND;
  rows.push({
    id: "web.render",
    figure: renderFigure(sizes),
    value: `${ms(drawMs)} in ${frames} draws, longest ${ms(longest)}`,
    reference: `page main thread ${
      ms(mainThread)
    } (script, layout, style) over a ${ms(streamMs)} stream`,
    ratio: ratio(mainThread / streamMs),
    target: "longest draw ≤ 16 ms",
    met: smoke ? null : longest <= 16,
  });
  progress(
    `web: socket ${Math.round(max(direct))} max, page ${
      Math.round(max(bridged))
    } max tokens/s`,
  );
  return { rows, sections: [] };
}
