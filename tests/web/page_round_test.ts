/**
 * The page's side of SPEC section 12 in a real Chromium, against a
 * scripted daemon sending the events docs/protocol.md defines: code blocks
 * (highlighted, labelled, copied), the model's short name, each
 * conversation's own meter, a daemon that is down, "answering…", search
 * marks, the newest turn in view, a turn's timings, the summary, the
 * microphone, and clicks that count when the page redraws under them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { BoundingBox, Page } from "../support/puppeteer.ts";
import { TestBrowser } from "../support/browser.ts";
import { PAGE_POLL, WebProcess } from "../support/web_harness.ts";
import { MODEL_PATH, RICH_REPLY } from "./conversation_fixture.ts";
import { overflows } from "./measure.ts";
import { hidden, pageTest, POLL, shows, stack } from "./scripted_daemon.ts";

/** Where the element is on the page; fails when it is absent or not drawn. */
async function boxOf(page: Page, selector: string): Promise<BoundingBox> {
  const box = await (await page.$(selector))?.boundingBox();
  assert.ok(box, `${selector} is on the page`);
  return box;
}

/** Presses the mouse button on the element's middle and holds it; returns where the element was. */
async function pressOn(page: Page, selector: string): Promise<BoundingBox> {
  const box = await boxOf(page, selector);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  return box;
}

/** Runs a script in the page and returns its value as `T`. */
async function run<T>(page: Page, script: string): Promise<T> {
  return await page.evaluate(script) as T;
}

pageTest(
  "a code block is highlighted under its language, and Copy puts its text on the clipboard",
  async () => {
    await using s = await stack({
      id: 2,
      turns: [{ user: "Sort?", reply: RICH_REPLY, tools: [] }],
    });
    const { page, browser, web } = s;
    await shows(page, ".turn.last .code-lang", "python");
    assert.ok(
      await run<number>(
        page,
        `document.querySelectorAll(".turn.last .hljs-keyword").length`,
      ) > 0,
      "keywords are highlighted",
    );
    await browser.browser.defaultBrowserContext().overridePermissions(
      web.origin,
      ["clipboard-read", "clipboard-write", "clipboard-sanitized-write"],
    );
    await page.click(".turn.last .code-block .copy");
    await shows(page, ".turn.last .code-block .copy", "Copied");
    const copied = await run<string>(page, `navigator.clipboard.readText()`);
    assert.match(copied, /^people = \[/);
    assert.match(copied, /# list\.sort\(\) sorts in place instead\n$/);
    // Task list items are checkboxes.
    assert.deepEqual(
      await run<boolean[]>(
        page,
        `[...document.querySelectorAll(".turn.last input.task-box")].map((box) => box.checked && box.disabled)`,
      ),
      [true, false],
    );
  },
);

pageTest(
  "the header names the model by its short name, the full path in its tooltip",
  async () => {
    await using s = await stack({
      model: MODEL_PATH,
      backend: {
        state: "up",
        url: "http://127.0.0.1:8080",
        model: MODEL_PATH,
        ctx_max: 8192,
        message: null,
      },
    });
    const { page } = s;
    await shows(page, "#backend", "Qwen3-8B-Q4_K_M · ready");
    assert.doesNotMatch(
      await run<string>(page, `document.getElementById("backend").textContent`),
      /models|gguf/,
    );
    assert.match(
      await run<string>(page, `document.getElementById("backend").title`),
      new RegExp(MODEL_PATH.replaceAll(".", "\\.")),
    );
  },
);

pageTest(
  "a new conversation shows no meter from the one before, and the state says answering once tokens come",
  async () => {
    await using s = await stack({
      id: 1,
      turns: [{ user: "a", reply: "b", tools: [] }],
      ctx_used: 3000,
      ctx_max: 4096,
      ctx_sent: 1,
      ctx_total: 1,
    });
    const { page, daemon } = s;
    await shows(page, "#ctx-text", "context 3,000 / 4,096");
    await daemon.send({ type: "conversation", id: null, turns: [] });
    await page.waitForFunction(
      `document.getElementById("ctx").hidden === true`,
      POLL,
    );
    await daemon.send(
      { type: "user", text: "Hello?" },
      { type: "state", state: "thinking" },
      { type: "think", delta: "Let me see." },
    );
    await shows(page, "#state", "thinking…");
    await daemon.send({ type: "token", delta: "Hi" });
    await shows(page, "#state", "answering…");
    await daemon.send(
      {
        type: "done",
        id: 8,
        stopped: false,
        timings: {
          prompt_n: 12,
          cache_n: 300,
          predicted_n: 20,
          prompt_ms: 400,
          predicted_ms: 1000,
        },
      },
      { type: "ctx", used: 332, max: 4096, sent: 0, total: 0, summarized: 0 },
      { type: "state", state: "idle" },
    );
    await shows(page, "#ctx-text", "context 332 / 4,096");
    await shows(
      page,
      ".turn.last .figures",
      "20 tokens/s · 20 tokens · prompt: 12 read, 300 reused in 0.4 s",
    );
    await shows(page, "#state", "idle");
  },
);

pageTest(
  "a reply whose last tokens come with its done keeps what was drawn, shows them, and highlights a code block left open",
  async () => {
    await using s = await stack({ id: 1, turns: [] });
    const { page, daemon } = s;
    await daemon.send(
      { type: "user", text: "Show me." },
      { type: "state", state: "thinking" },
      { type: "token", delta: "First part.\n\nSecond part.\n\n" },
      { type: "token", delta: "```python\ndef answer():\n" },
    );
    await shows(page, ".turn.live .reply", "def answer():");
    await run(
      page,
      `document.querySelector(".turn.live .reply p").dataset.mark = "drawn"`,
    );
    await daemon.send(
      { type: "token", delta: "    return 42\n" },
      { type: "done", id: 9, stopped: false },
      { type: "state", state: "idle" },
    );
    await shows(page, ".turn.last .reply", "return 42");
    assert.equal(
      await run<string | null>(
        page,
        `document.querySelector(".turn.last .reply p")?.dataset.mark ?? null`,
      ),
      "drawn",
      "the blocks drawn while streaming are kept, not drawn again",
    );
    assert.deepEqual(
      await run<string[]>(
        page,
        `[...document.querySelectorAll(".turn.last .hljs-keyword")].map((k) => k.textContent)`,
      ),
      ["def", "return"],
    );
    assert.equal(
      await run<number>(page, `document.querySelectorAll(".turn").length`),
      1,
    );
  },
);

pageTest(
  "a daemon that is not running says so, not that there are no conversations",
  async () => {
    const home = await Deno.makeTempDir({ prefix: "da-web-down-" });
    try {
      const runtime = join(home, "run");
      await Deno.mkdir(runtime, { mode: 0o700 });
      await using web = await WebProcess.start(
        join(runtime, "desktop-assistant.sock"),
        runtime,
      );
      await using browser = await TestBrowser.launch();
      // On a phone, where the long reason must still fit.
      const page = await browser.page(web.url, { width: 390, height: 844 });
      await shows(page, "#connection", "no daemon answers");
      await shows(page, "#log", "The daemon is not running");
      assert.deepEqual(await overflows(page), []);
      await page.click("#menu");
      await shows(page, "#list", "The daemon is not running");
      await shows(page, "#log", "deno task start");
      await shows(page, "#connection", "disconnected");
      assert.doesNotMatch(
        await run<string>(page, `document.body.innerText`),
        /No conversations yet/,
      );
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
);

pageTest(
  "a click on a conversation counts when the list redraws between pressing and letting go",
  async () => {
    await using s = await stack({});
    const { page, daemon } = s;
    await daemon.send({
      type: "conversations",
      items: [
        { id: 4, title: "Newest", updated: 1_790_000_300 },
        { id: 3, title: "Sorting", updated: 1_790_000_200 },
      ],
    });
    await shows(page, "#list", "Sorting");
    await pressOn(page, '#list button.conv[data-id="3"]');
    // A title arrives for the other conversation while the button is down.
    await daemon.send({ type: "renamed", id: 4, title: "Newest, titled" });
    await shows(page, "#list", "Newest, titled");
    await page.mouse.up();
    const open = await daemon.command("open");
    assert.equal(open.id, 3);
  },
);

pageTest(
  "Allow pressed on one call counts when a second call's prompt arrives before it is let go",
  async () => {
    await using s = await stack({});
    const { page, daemon } = s;
    await daemon.send(
      { type: "user", text: "Weather in Paris and Rome?" },
      { type: "state", state: "confirm" },
      {
        type: "confirm",
        call: "c1",
        tool: "weather",
        args: { place: "Paris" },
      },
    );
    await shows(page, "#confirms", "Paris");
    const allow = '#confirms [data-call="c1"] .allow';
    const box = await pressOn(page, allow);
    await daemon.send({
      type: "confirm",
      call: "c2",
      tool: "weather",
      args: { place: "Rome" },
    });
    await shows(page, "#confirms", "Rome");
    // The prompt pressed on has not moved: the new one went above it.
    assert.deepEqual(await boxOf(page, allow), box);
    await page.mouse.up();
    const approve = await daemon.command("approve");
    assert.equal(approve.call, "c1");
    assert.equal(approve.allow, true);
    // Alt+A answers the oldest call, and only its Allow says so.
    assert.deepEqual(
      await page.$$eval(
        "#confirms .allow",
        (nodes) =>
          nodes.map((node) => (node as unknown as { title: string }).title),
      ),
      ["", "Alt+A"],
    );
  },
);

pageTest(
  "search results are marked from marks, so a reply's own bold is not a match",
  async () => {
    await using s = await stack({});
    const { page, daemon } = s;
    await page.focus("#search");
    await page.keyboard.type("sorted");
    const search = await daemon.command("search");
    const text = "Use **`sorted()`** to get a new list";
    await daemon.send({
      type: "results",
      items: [{
        id: 3,
        title: "Sorting",
        snippet: "Use ****`**sorted**()`**** to get a new list",
        text,
        marks: [[7, 13]],
      }],
      ref: search.ref,
    });
    await shows(page, "#list .conv-snippet", text);
    assert.deepEqual(
      await run<string[]>(
        page,
        `[...document.querySelectorAll("#list mark")].map((m) => m.textContent)`,
      ),
      ["sorted"],
    );
  },
);

pageTest(
  "an opened conversation shows its newest turn; the summary sits collapsed above the turns and changes live",
  async () => {
    const turns = Array.from({ length: 12 }, (_, i) => ({
      user: `Question ${i + 1}`,
      reply: `A reply long enough to take room.\n\n${"- a point\n".repeat(6)}`,
      tools: [],
    }));
    await using s = await stack({});
    const { page, daemon } = s;
    await daemon.send({
      type: "conversation",
      id: 4,
      turns,
      summary: { text: "Questions 1 to 6 were about points.", turns: 6 },
    });
    await shows(page, ".turn.last .question", "Question 12");
    const inView = await run<boolean>(
      page,
      `(() => {
        const log = document.getElementById("log").getBoundingClientRect();
        const q = document.querySelector(".turn.last .question").getBoundingClientRect();
        return q.top >= log.top - 1 && q.bottom <= log.bottom + 1;
      })()`,
    );
    assert.ok(inView, "the newest question is in view");
    await shows(page, ".summary-block summary", "Summary of the first 6 turns");
    assert.equal(
      await run<boolean>(page, `document.querySelector(".summary-block").open`),
      false,
    );
    assert.equal(
      await run<boolean>(
        page,
        `document.querySelector("#log").firstElementChild.classList.contains("summary-block")`,
      ),
      true,
    );
    await daemon.send({
      type: "summary",
      id: 4,
      text: "Questions 1 to 8 were about points.",
      turns: 8,
    });
    await shows(page, ".summary-block summary", "Summary of the first 8 turns");
    await shows(page, ".summary-block .summary-text", "1 to 8");
  },
);

pageTest(
  "the microphone toggles listening through the daemon, shows its state, and an older daemon disables it",
  async () => {
    await using s = await stack({ listening: false });
    const { page, daemon } = s;
    assert.equal(await hidden(page, "#listen"), false);
    await page.click("#listen");
    const on = await daemon.command("listen");
    assert.equal(on.on, true);
    await daemon.send({ type: "listening", on: true, ref: on.ref });
    await page.waitForFunction(
      `document.getElementById("listen").getAttribute("aria-pressed") === "true"`,
      POLL,
    );
    await shows(page, "#listen", "Listening");
    await page.click("#listen");
    const off = await daemon.command("listen");
    assert.equal(off.on, false);
    // An older daemon does not know the command.
    await daemon.send({
      type: "error",
      message: "unknown command listen",
      code: "unknown_command",
      ref: off.ref,
    });
    await page.waitForFunction(
      `document.getElementById("listen").disabled === true`,
      PAGE_POLL,
    );
    await shows(page, "#notices", "This daemon cannot listen");
  },
);
