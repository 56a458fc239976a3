/**
 * The page against the whole protocol of SPEC sections 4 and 11, before
 * every part of it is in the daemon: a scripted daemon on a real Unix
 * socket sends the events those sections define (the backend, the context
 * budget, private conversations, approvals, rename, export, a cut reply)
 * through the real canvas process and bridge to a real Chromium, and reads
 * back the commands the page sends. Skipped where Chromium is missing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { screenshot } from "../support/browser.ts";
import { within } from "../support/client_harness.ts";
import { hidden, pageTest, POLL, shows, stack } from "./scripted_daemon.ts";

declare const document: {
  querySelector(selector: string): {
    readonly textContent: string | null;
    readonly hidden: boolean;
  } | null;
};

const TURNS = [
  { user: "What is FTS5?", reply: "A full-text index.", tools: [] },
  { user: "And bm25?", reply: "A ranking.", tools: ["date"] },
];

pageTest(
  "11.2, 11.3, 11.4: the backend, the context meter with the turns sent, and a private conversation",
  async () => {
    await using s = await stack({
      private: true,
      ctx_used: 3900,
      ctx_max: 4096,
      ctx_sent: 6,
      ctx_total: 14,
      backend: {
        state: "loading",
        url: "http://127.0.0.1:8080",
        model: null,
        ctx_max: null,
        message: null,
      },
    });
    const { page, daemon } = s;
    await shows(page, "#backend", "llama-server loading its model…");
    await shows(
      page,
      "#ctx-text",
      "context 3,900 / 4,096 · 6 of 14 earlier turns sent",
    );
    assert.equal(await hidden(page, "#private-badge"), false);
    await shows(page, "#title", "Private conversation");
    assert.match(
      await page.$eval("#composer", (node) => node.className),
      /degraded/,
    );
    await daemon.send({
      type: "backend",
      state: "down",
      url: "http://127.0.0.1:8080",
      model: null,
      ctx_max: null,
      message: "connection refused",
    });
    await shows(page, "#backend", "llama-server down: connection refused");
    assert.match(
      await page.$eval(
        "#input",
        (node) => (node as unknown as { placeholder: string }).placeholder,
      ),
      /llama-server down: connection refused\. Asking still tries\./,
    );
    await screenshot(page, "10-backend-down-private");
    await daemon.send({
      type: "backend",
      state: "up",
      url: "http://127.0.0.1:8080",
      model: "qwen3-8b",
      ctx_max: 4096,
      message: null,
    });
    await shows(page, "#backend", "qwen3-8b · ready");
    assert.doesNotMatch(
      await page.$eval("#composer", (node) => node.className),
      /degraded/,
    );
  },
);

pageTest(
  "11.5: a tool call waits for approval; Allow sends approve and approved closes the prompt",
  async () => {
    await using s = await stack({});
    const { page, daemon } = s;
    await daemon.send(
      { type: "user", text: "Weather in Paris?" },
      { type: "state", state: "confirm" },
      {
        type: "confirm",
        call: "c1",
        tool: "weather",
        args: { place: "Paris" },
      },
    );
    await shows(page, "#confirms", 'Run weather with {"place":"Paris"}?');
    await shows(page, "#state", "waiting for your approval");
    await screenshot(page, "11-approval");
    await page.click("#confirms .allow");
    const approve = await daemon.command("approve");
    assert.equal(approve.call, "c1");
    assert.equal(approve.allow, true);
    assert.equal(typeof approve.ref, "string");
    await daemon.send(
      { type: "approved", call: "c1", allow: true },
      { type: "state", state: "tool", tool: "weather" },
      { type: "tool", name: "weather", done: false },
    );
    await page.waitForFunction(
      () => document.querySelector("#confirms")?.hidden === true,
      POLL,
    );
    await shows(page, ".turn.live .tools", "weather: allowed");
    await shows(page, ".turn.live .tools", "weather…");
    // A second call, denied from the keyboard.
    await daemon.send(
      { type: "state", state: "confirm" },
      { type: "confirm", call: "c2", tool: "shell", args: { cmd: "ls" } },
    );
    await shows(page, "#confirms", "Run shell");
    await page.keyboard.down("Alt");
    await page.keyboard.press("KeyD");
    await page.keyboard.up("Alt");
    const deny = await daemon.command("approve");
    assert.deepEqual([deny.call, deny.allow], ["c2", false]);
  },
);

pageTest(
  "11.4: retry, edit, rename, export and private send their commands; a cut reply says so",
  async () => {
    await using s = await stack({ id: 12, turns: TURNS });
    const { page, daemon, home } = s;
    await daemon.send({
      type: "conversations",
      items: [{ id: 12, title: "What is FTS5?", updated: 1_700_000_000 }],
    });
    await shows(page, "#title", "What is FTS5?");

    await page.click(".turn.last .retry");
    assert.equal((await daemon.command("retry")).type, "retry");
    // The retry streams in place of the last turn.
    await daemon.send(
      { type: "user", text: "And bm25?", replaces: true },
      { type: "token", delta: "A better ranking." },
    );
    await shows(page, ".turn.live .reply", "A better ranking.");
    assert.equal(await hidden(page, ".turn.last-stored"), true);
    await daemon.send(
      {
        type: "done",
        id: 12,
        stopped: false,
        replaces: true,
        truncated: true,
        truncated_by: "max_tokens",
      },
      { type: "state", state: "idle" },
    );
    await shows(page, ".turn.last .reply", "A better ranking.");
    await shows(page, ".turn.last .note", "cut short: it reached max_tokens");
    assert.equal(await page.$$eval(".turn", (nodes) => nodes.length), 2);

    // ↑ in the empty input edits the last question.
    await page.focus("#input");
    await page.keyboard.press("ArrowUp");
    assert.equal(await hidden(page, "#editing"), false);
    await page.keyboard.type(" (explain)");
    await page.keyboard.press("Enter");
    const edit = await daemon.command("edit");
    assert.equal(edit.text, "And bm25? (explain)");
    assert.equal(await hidden(page, "#editing"), true);

    await page.keyboard.press("F2");
    await page.keyboard.down("Control");
    await page.keyboard.press("a");
    await page.keyboard.up("Control");
    await page.keyboard.type("Search engines");
    await page.keyboard.press("Enter");
    const rename = await daemon.command("rename");
    assert.deepEqual([rename.id, rename.title], [12, "Search engines"]);
    await daemon.send({ type: "renamed", id: 12, title: "Search engines" });
    await shows(page, "#title", "Search engines");
    await shows(page, "#list", "Search engines");

    const downloads = join(home, "downloads");
    await Deno.mkdir(downloads);
    const session = await page.createCDPSession();
    await session.send("Browser.setDownloadBehavior", {
      behavior: "allow",
      downloadPath: downloads,
    });
    await page.click("#export-md");
    const exported = await daemon.command("export");
    assert.deepEqual([exported.id, exported.format], [12, "markdown"]);
    await daemon.send({
      type: "export",
      id: 12,
      format: "markdown",
      text: "# Search engines\n\n**What is FTS5?**\n",
      ref: exported.ref,
    });
    const file = join(downloads, "conversation-12.md");
    await within(
      (async () => {
        while (true) {
          try {
            return await Deno.readTextFile(file);
          } catch {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      })(),
      "the exported file",
    ).then((text) =>
      assert.equal(text, "# Search engines\n\n**What is FTS5?**\n")
    );
    await session.detach();

    await page.click("#private");
    const fresh = await daemon.command("new");
    assert.equal(fresh.private, true);
  },
);

pageTest(
  "a daemon without private conversations gets a warning, not a silent saved one",
  async () => {
    await using s = await stack({});
    const { page, daemon } = s;
    await page.click("#private");
    assert.equal((await daemon.command("new")).private, true);
    // Today's daemon ignores the field and answers a plain new conversation.
    await daemon.send({ type: "conversation", id: null, turns: [] });
    await shows(page, "#notices", "no private conversations yet");
    assert.equal(await hidden(page, "#private-badge"), true);
  },
);

pageTest(
  "a tab opened while a reply streams in another conversation than the shown one keeps it out, and renames the shown one",
  async () => {
    await using s = await stack({
      state: "thinking",
      id: 12,
      turns: TURNS,
      pending: {
        id: 15,
        user: "Meanwhile?",
        reply: "Streaming",
        think: "",
        tools: [],
      },
    });
    const { page, daemon } = s;
    await daemon.send({
      type: "conversations",
      items: [
        { id: 15, title: "Meanwhile?", updated: 1_700_000_100 },
        { id: 12, title: "What is FTS5?", updated: 1_700_000_000 },
      ],
    });
    await shows(page, "#title", "What is FTS5?");
    await shows(
      page,
      "#elsewhere-text",
      "A reply is streaming in “Meanwhile?”.",
    );
    assert.equal(await hidden(page, "#elsewhere"), false);
    assert.equal(await hidden(page, "#stop"), false);
    await daemon.send({ type: "token", delta: " on" });
    await page.waitForFunction(
      () =>
        (globalThis as unknown as {
          daCanvas: { model: { pending: { reply: string } } };
        })
          .daCanvas.model.pending.reply === "Streaming on",
      POLL,
    );
    assert.equal(await page.$$eval(".turn.live", (nodes) => nodes.length), 0);
    assert.equal(await page.$$eval(".turn", (nodes) => nodes.length), 2);
    await screenshot(page, "14-reply-elsewhere");
    await daemon.send(
      { type: "done", id: 15, stopped: false },
      { type: "state", state: "idle" },
    );
    await shows(page, "#notices", "The reply was saved in “Meanwhile?”.");
    assert.equal(await hidden(page, "#elsewhere"), true);
    assert.equal(await page.$$eval(".turn", (nodes) => nodes.length), 2);
    await shows(page, ".turn.last .reply", "A ranking.");
    await page.keyboard.press("F2");
    await page.keyboard.down("Control");
    await page.keyboard.press("a");
    await page.keyboard.up("Control");
    await page.keyboard.type("Full-text search");
    await page.keyboard.press("Enter");
    const rename = await daemon.command("rename");
    assert.deepEqual([rename.id, rename.title], [12, "Full-text search"]);
  },
);

pageTest(
  "11.5: a tab opened while a call waits finds it in hello.confirm even when the hello leaves the reply out",
  async () => {
    const call = { call: "c9", tool: "weather", args: { place: "Oslo" } };
    await using s = await stack({
      state: "confirm",
      tool: "weather",
      id: null,
      pending: null,
      confirm: call,
    });
    const { page, daemon } = s;
    await shows(page, "#confirms", 'Run weather with {"place":"Oslo"}?');
    await shows(
      page,
      "#elsewhere-text",
      "A reply is streaming in another conversation.",
    );
    assert.equal(await hidden(page, "#elsewhere"), false);
    await page.click("#confirms .allow");
    const approve = await daemon.command("approve");
    assert.deepEqual([approve.call, approve.allow], ["c9", true]);
    await daemon.send(
      { type: "approved", call: "c9", allow: true },
      { type: "state", state: "tool", tool: "weather" },
      { type: "tool", name: "weather", done: false },
      { type: "tool", name: "weather", done: true },
      { type: "state", state: "thinking" },
      { type: "token", delta: "Cold." },
      { type: "done", id: 4, stopped: false },
      { type: "state", state: "idle" },
    );
    await page.waitForFunction(
      () => document.querySelector("#confirms")?.hidden === true,
      POLL,
    );
    await shows(page, "#state", "idle");
    // The reply made conversation 4; the tab still shows its new one.
    await shows(page, "#title", "New conversation");
    assert.equal(await page.$$eval(".turn", (nodes) => nodes.length), 0);
    assert.equal(
      await page.$eval(
        "#rename",
        (node) => (node as unknown as { disabled: boolean }).disabled,
      ),
      true,
    );
  },
);

pageTest(
  "search answers are paired with their query by ref: a failed search shifts nothing, and an answer after the box is emptied shows nothing",
  async () => {
    await using s = await stack({});
    const { page, daemon } = s;
    await daemon.send({
      type: "conversations",
      items: [
        { id: 1, title: "Pancakes", updated: 1_700_000_100 },
        { id: 2, title: "Capital of Italy", updated: 1_700_000_000 },
      ],
    });
    await shows(page, "#list", "Pancakes");
    await page.focus("#search");
    await page.keyboard.type("pan");
    const failed = await daemon.command("search");
    assert.equal(failed.q, "pan");
    await daemon.send({
      type: "error",
      message: "search failed",
      ref: failed.ref,
    });
    await shows(page, "#notices", "search failed");

    await page.keyboard.type("c");
    const next = await daemon.command("search");
    assert.equal(next.q, "panc");
    assert.notEqual(next.ref, failed.ref);
    await daemon.send({
      type: "results",
      items: [{ id: 1, title: "Pancakes", snippet: "**Panc**akes" }],
      ref: next.ref,
    });
    await shows(page, "#list-label", "Results");
    await shows(page, "#list mark", "Panc");
    // Enter takes the first result: these results are the box's query's.
    await page.keyboard.press("Enter");
    await page.waitForFunction(
      () =>
        (globalThis as unknown as {
          document: { activeElement: { dataset?: { id?: string } } };
        }).document.activeElement.dataset?.id === "1",
      POLL,
    );

    await page.focus("#search");
    await page.keyboard.type("x");
    const late = await daemon.command("search");
    assert.equal(late.q, "pancx");
    await page.keyboard.press("Escape");
    await shows(page, "#list-label", "Conversations");
    await daemon.send(
      {
        type: "results",
        items: [{ id: 2, title: "Capital of Italy", snippet: "**x**" }],
        ref: late.ref,
      },
      // Drawn after the answer above: once it shows, that answer was read.
      { type: "renamed", id: 1, title: "Pancakes, renamed" },
    );
    await shows(page, "#list", "Pancakes, renamed");
    await shows(page, "#list-label", "Conversations");
    assert.equal(
      await page.$$eval("#list button.conv", (nodes) => nodes.length),
      2,
    );
    assert.equal(await page.$$eval("#list mark", (nodes) => nodes.length), 0);
  },
);
