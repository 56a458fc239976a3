/**
 * The canvas in a real headless Chromium (Debian's package, driven by
 * puppeteer-core), against the real daemon and the canvas process with
 * their derived grants: what a user does and sees. Skipped, with the
 * reason printed, where Chromium is not installed. Screenshots of the main
 * states are kept in $TMPDIR/da-web-screenshots/.
 */
import assert from "node:assert/strict";
import type { Page } from "../support/puppeteer.ts";
import { newToken } from "../../src/web/access.ts";
import {
  chromiumMissing,
  screenshot,
  TestBrowser,
} from "../support/browser.ts";
import { within } from "../support/client_harness.ts";
import { Daemon } from "../support/daemon_harness.ts";
import {
  FakeLlm,
  type FakeLlmOptions,
  gated,
  hold,
  reply,
  type Script,
} from "../support/fake_llm.ts";
import {
  type EventOf,
  isIdle,
  type Received,
  SocketClient,
} from "../support/socket_client.ts";
import { greeted, WebProcess } from "../support/web_harness.ts";

/** The page's globals, as the functions run in the browser see them. */
interface BrowserElement {
  readonly textContent: string | null;
  readonly tagName: string;
  readonly hidden: boolean;
  readonly offsetParent: unknown;
  readonly attributes: Iterable<{ readonly name: string }>;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): Iterable<BrowserElement>;
}
declare const document: {
  querySelector(selector: string): BrowserElement | null;
  readonly body: { readonly innerText: string };
  readonly title: string;
};

const skip = chromiumMissing();
if (skip !== null) {
  Deno.stderr.writeSync(
    new TextEncoder().encode(`page_test skipped: ${skip}\n`),
  );
}

/** How long the page may take to show something. */
const SHOW_MS = 15_000;
/**
 * How waits poll: on a timer, since a tab in the background gets no
 * animation frames (the page itself falls back to a timer there too).
 */
const POLL = { timeout: SHOW_MS, polling: 50 } as const;

function pageTest(name: string, fn: () => Promise<void>): void {
  Deno.test({
    name: name + (skip === null ? "" : ` (skipped: ${skip})`),
    ignore: skip !== null,
    fn,
  });
}

const FIXTURE_TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname
  .replace(/\/$/, "");

async function stack(
  extraFlags: string[] = [],
  daemonOptions: { config?: string; toolsDirs?: string[] } = {},
  llmOptions: FakeLlmOptions = {},
) {
  const llm = await FakeLlm.start(llmOptions);
  const daemon = await Daemon.start({ llmUrl: llm.url, ...daemonOptions });
  const web = await WebProcess.start(
    daemon.paths.socketPath,
    daemon.env.XDG_RUNTIME_DIR!,
  );
  const browser = await TestBrowser.launch(extraFlags);
  return {
    llm,
    daemon,
    web,
    browser,
    async [Symbol.asyncDispose]() {
      await browser[Symbol.asyncDispose]();
      await web[Symbol.asyncDispose]();
      await daemon[Symbol.asyncDispose]();
      await llm[Symbol.asyncDispose]();
    },
  };
}

/** Opens the canvas in a new tab and waits for the daemon's hello. */
async function openCanvas(
  browser: TestBrowser,
  web: WebProcess,
): Promise<Page> {
  const page = await browser.page(web.url);
  await greeted(page);
  return page;
}

/** Waits until the element's text contains `text`. */
async function shows(page: Page, selector: string, text: string) {
  try {
    await page.waitForFunction(
      (sel: string, want: string) =>
        document.querySelector(sel)?.textContent?.includes(want) === true,
      POLL,
      selector,
      text,
    );
  } catch (error) {
    const now = await page.$eval(selector, (node) => node.textContent)
      .catch(() => "(no such element)");
    throw new Error(
      `${selector} never showed ${JSON.stringify(text)}; it shows ${
        JSON.stringify(now)
      }`,
      { cause: error },
    );
  }
}

/** The text of the first element matching, trimmed, or null. */
function textOf(page: Page, selector: string): Promise<string | null> {
  return page.evaluate(
    (sel: string) => document.querySelector(sel)?.textContent?.trim() ?? null,
    selector,
  );
}

/** Whether the element exists and is not hidden. */
function visible(page: Page, selector: string): Promise<boolean> {
  return page.evaluate((sel: string) => {
    const node = document.querySelector(sel);
    return node !== null && !node.hidden && node.offsetParent !== null;
  }, selector);
}

/** Clicks in a tab, brought to the front first as a user's click would. */
async function click(page: Page, selector: string): Promise<void> {
  await page.bringToFront();
  await page.click(selector);
}

async function ask(page: Page, text: string): Promise<void> {
  await page.bringToFront();
  await page.focus("#input");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}

/** Waits until the page has no reply in flight and is idle. */
async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () => {
      const model = (globalThis as {
        daCanvas?: { model: { pending: unknown; state: string } };
      }).daCanvas?.model;
      return model?.pending === null && model.state === "idle";
    },
    POLL,
  );
}

const LIVE = ".turn.live .reply";
const LAST = ".turn.last .reply";

/** Whether a button is disabled. */
function disabled(page: Page, selector: string): Promise<boolean> {
  return page.$eval(
    selector,
    (node) => (node as unknown as { disabled: boolean }).disabled,
  );
}

/** Waits until the tab shows the reply in flight as streaming in another conversation. */
async function elsewhere(page: Page): Promise<void> {
  await page.waitForFunction(
    () => {
      const model = (globalThis as {
        daCanvas?: { model: { pending: unknown; shownPending: unknown } };
      }).daCanvas?.model;
      return model?.pending != null && model.shownPending === null &&
        document.querySelector("#elsewhere")?.hidden === false;
    },
    POLL,
  );
}

/** Waits until the tab is idle and has drawn it: no Stop, no reply elsewhere. */
async function drawnIdle(page: Page): Promise<void> {
  await settled(page);
  await page.waitForFunction(
    () =>
      document.querySelector("#elsewhere")?.hidden === true &&
      document.querySelector("#stop")?.hidden === true,
    POLL,
  );
}

/** A reply of `n` tokens of the fake, one word each. */
function long(n: number): Script {
  return reply({ content: Array.from({ length: n }, () => " story") });
}

pageTest("ask, watch the tokens stream, and stop with Esc", async () => {
  await using s = await stack();
  const { llm, browser, web } = s;
  const page = await openCanvas(browser, web);
  assert.equal(await textOf(page, "#connection"), "connected");

  const gate = Promise.withResolvers<void>();
  llm.enqueue(gated("Once", gate.promise, " upon a **time**."));
  await ask(page, "Tell me a story");
  await shows(page, ".turn.live .question", "Tell me a story");
  await shows(page, LIVE, "Once");
  // The first token is on screen while the rest is still held back.
  assert.equal(await textOf(page, LIVE), "Once");
  assert.ok(await visible(page, "#stop"), "the stop button shows");
  assert.equal(await textOf(page, "#input"), "");
  await screenshot(page, "01-streaming");
  gate.resolve();
  await shows(page, LAST, "Once upon a time.");
  await settled(page);
  assert.equal(
    await page.$eval(`${LAST} strong`, (node) => node.textContent),
    "time",
  );
  assert.ok(!await visible(page, "#stop"), "the stop button is gone");
  await shows(page, "#list", "Tell me a story");
  await shows(page, "#title", "Tell me a story");

  llm.enqueue(hold(["Partial", " answer"]));
  await ask(page, "Go on");
  await shows(page, LIVE, "Partial answer");
  const request = llm.chats.at(-1)!;
  await page.keyboard.press("Escape");
  await within(request.aborted, "the upstream request to be aborted");
  await shows(page, ".turn.last .note", "stopped");
  await settled(page);
  assert.equal(await textOf(page, LAST), "Partial answer");
  assert.equal(await textOf(page, "#state"), "idle");
  await screenshot(page, "02-stopped");
  assert.deepEqual(browser.errors, []);
});

pageTest(
  "search the history and open a conversation from the sidebar",
  async () => {
    await using s = await stack();
    const { llm, daemon, browser, web } = s;
    {
      await using client = await SocketClient.connect(daemon.paths.socketPath);
      await client.next("hello");
      llm.enqueue(reply({ content: ["Rome is", " the capital."] }));
      await client.send({ type: "ask", text: "What is the capital of Italy?" });
      await client.until((event) => event.type === "done");
      await client.send({ type: "new" });
      llm.enqueue(reply({ content: ["Flour, eggs", " and milk."] }));
      await client.send({ type: "ask", text: "A recipe for pancakes" });
      await client.until((event) => event.type === "done");
      await client.send({ type: "new" });
      await client.until((event) => event.type === "conversation");
    }
    const page = await openCanvas(browser, web);
    await shows(page, "#list", "A recipe for pancakes");
    await shows(page, "#list", "What is the capital of Italy?");

    await page.keyboard.down("Control");
    await page.keyboard.press("k");
    await page.keyboard.up("Control");
    await page.keyboard.type("capit");
    await shows(page, "#list-label", "Results");
    await shows(page, "#list mark", "capital");
    assert.equal(
      await page.$$eval("#list button.conv", (nodes) => nodes.length),
      1,
    );
    await screenshot(page, "03-search");
    // Enter takes the first result, Enter again opens it.
    await page.keyboard.press("Enter");
    await page.keyboard.press("Enter");
    await shows(page, ".turn.last .question", "What is the capital of Italy?");
    await shows(page, LAST, "Rome is the capital.");
    await shows(page, "#title", "What is the capital of Italy?");
    await screenshot(page, "04-opened");

    await click(page, "#search");
    await page.keyboard.press("Escape");
    await shows(page, "#list-label", "Conversations");
    const other = await page.$$eval(
      "#list button.conv",
      (nodes) =>
        nodes.find((node) => node.textContent?.includes("pancakes"))?.dataset
          .id,
    );
    await click(page, `#list button.conv[data-id="${other}"]`);
    await shows(page, LAST, "Flour, eggs and milk.");
    assert.equal(await page.$$eval(".turn", (nodes) => nodes.length), 1);
    assert.deepEqual(browser.errors, []);
  },
);

pageTest("a second tab shows the same thing live", async () => {
  await using s = await stack();
  const { llm, browser, web } = s;
  const first = await openCanvas(browser, web);
  const second = await openCanvas(browser, web);

  const gate = Promise.withResolvers<void>();
  llm.enqueue(gated("Both tabs", gate.promise, " see this."));
  await ask(first, "Are you in step?");
  await shows(second, ".turn.live .question", "Are you in step?");
  await shows(second, LIVE, "Both tabs");
  assert.ok(await visible(second, "#stop"));
  await screenshot(second, "05-second-tab-live");
  gate.resolve();
  await shows(second, LAST, "Both tabs see this.");
  await shows(first, LAST, "Both tabs see this.");
  await shows(second, "#list", "Are you in step?");

  // A new conversation in one tab is the new conversation in both.
  await click(first, "#new");
  await shows(second, "#title", "New conversation");
  assert.equal(await second.$$eval(".turn", (nodes) => nodes.length), 0);
  // Opening it again from the second tab opens it in the first.
  await click(second, "#list button.conv");
  await shows(first, LAST, "Both tabs see this.");
  await shows(first, "#title", "Are you in step?");
  assert.deepEqual(browser.errors, []);
});

pageTest(
  "a tab opened mid-reply shows the reply so far, then the rest",
  async () => {
    await using s = await stack();
    const { llm, browser, web } = s;
    const first = await openCanvas(browser, web);
    const gate = Promise.withResolvers<void>();
    llm.enqueue(
      reply({ think: ["Thinking", " it over."], content: ["Ready."] }),
    );
    llm.enqueue(gated("So far,", gate.promise, " so good."));
    // A first turn, so the late tab also shows stored history.
    await ask(first, "Warm up");
    await shows(first, LAST, "Ready.");
    await settled(first);
    await ask(first, "How is it going?");
    await shows(first, LIVE, "So far,");

    const late = await openCanvas(browser, web);
    await shows(late, ".turn.live .question", "How is it going?");
    assert.equal(await textOf(late, LIVE), "So far,");
    assert.ok(await visible(late, "#stop"));
    assert.equal(await late.$$eval(".turn", (nodes) => nodes.length), 2);
    await screenshot(late, "06-late-tab");
    gate.resolve();
    await shows(late, LAST, "So far, so good.");
    await settled(late);
    assert.deepEqual(browser.errors, []);
  },
);

pageTest(
  "a model answer with raw HTML and script links renders inert",
  async () => {
    await using s = await stack();
    const { llm, browser, web } = s;
    const page = await openCanvas(browser, web);
    const answer = [
      'Look: <img src=x onerror="globalThis.pwned=1">',
      "\n\n[click me](javascript:globalThis.pwned=2)",
      " and [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
      " and <javascript:globalThis.pwned=3>",
      "\n\n<script>globalThis.pwned=4</script>",
      '\n\n<a href="javascript:globalThis.pwned=5">raw link</a>',
      "\n\n![pic](javascript:globalThis.pwned=6) ![remote](http://example.com/x.png)",
      "\n\n<iframe src=javascript:globalThis.pwned=7></iframe>",
      "\n\nA real link: [docs](https://example.com/docs).",
    ];
    llm.enqueue(reply({ content: answer }));
    await ask(page, "Show me some HTML");
    await shows(page, LAST, "A real link: docs.");
    await settled(page);
    const found = await page.evaluate((sel: string) => {
      const reply = document.querySelector(sel)!;
      return {
        elements: [...reply.querySelectorAll("*")].map((node) =>
          node.tagName.toLowerCase()
        ),
        links: [...reply.querySelectorAll("a")].map((a) => ({
          href: a.getAttribute("href"),
          rel: a.getAttribute("rel"),
          target: a.getAttribute("target"),
        })),
        handlers: [...reply.querySelectorAll("*")].flatMap((node) =>
          [...node.attributes].map((attr) => attr.name).filter((name) =>
            name.startsWith("on")
          )
        ),
        text: reply.textContent,
        pwned: (globalThis as { pwned?: number }).pwned ?? null,
      };
    }, LAST);
    for (const tag of ["img", "script", "iframe", "object", "embed", "svg"]) {
      assert.ok(!found.elements.includes(tag), `a <${tag}> was rendered`);
    }
    assert.deepEqual(found.handlers, []);
    assert.equal(found.pwned, null);
    // The model's HTML is shown as text, and only web links are links.
    assert.match(found.text!, /<img src=x onerror="globalThis\.pwned=1">/);
    assert.match(found.text!, /<script>globalThis\.pwned=4<\/script>/);
    assert.deepEqual(found.links, [
      {
        href: "http://example.com/x.png",
        rel: "noopener noreferrer nofollow",
        target: "_blank",
      },
      {
        href: "https://example.com/docs",
        rel: "noopener noreferrer nofollow",
        target: "_blank",
      },
    ]);
    await screenshot(page, "07-inert-html");
    assert.deepEqual(browser.errors, []);
  },
);

pageTest("llama-server going down shows in the page", async () => {
  await using s = await stack();
  const { llm, browser, web } = s;
  const page = await openCanvas(browser, web);
  // The daemon reports its backend from the hello on.
  assert.ok(await visible(page, "#backend"), "the backend pill shows");
  await llm[Symbol.asyncDispose]();
  // Down shows before anyone asks, and greys the input.
  await page.waitForFunction(
    () =>
      document.querySelector("#backend")?.getAttribute("data-state") ===
        "down",
    POLL,
  );
  await shows(page, "#backend", "llama-server down");
  await ask(page, "Are you there?");
  await shows(page, ".turn.last .note.error", "llama-server unreachable");
  await settled(page);
  await screenshot(page, "08-backend-down");
  assert.deepEqual(browser.errors, []);
});

pageTest(
  "in the browser: no token, a wrong token, a rebound name and a foreign page are refused",
  async () => {
    await using s = await stack([
      "--host-resolver-rules=MAP rebind.test 127.0.0.1",
    ]);
    const { browser, web, daemon } = s;
    const page = await browser.page();
    for (
      const url of [
        `${web.origin}/`,
        `${web.origin}/${newToken()}/`,
        `http://rebind.test:${web.port}/${web.token}/`,
        `http://localhost:${web.port}/${web.token}/`,
      ]
    ) {
      const response = await page.goto(url);
      assert.equal(response?.status(), 403, url);
      assert.match(
        await page.evaluate(() => document.body.innerText),
        /^Forbidden/,
      );
    }
    await screenshot(page, "09-refused");

    // A page from another origin that knows the token still cannot connect.
    await using foreign = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen() {},
    }, () =>
      new Response(
        `<!doctype html><script>
        const ws = new WebSocket(${JSON.stringify(web.socketUrl)});
        ws.onopen = () => { document.title = "opened"; };
        ws.onclose = (e) => { document.title = "closed " + e.code; };
      </script>`,
        { headers: { "Content-Type": "text/html" } },
      ));
    const other = await browser.page(`http://127.0.0.1:${foreign.addr.port}/`);
    await other.waitForFunction(
      () => document.title.startsWith("closed"),
      POLL,
    );
    assert.equal(await other.title(), "closed 1006");
    await other.close();
    assert.doesNotMatch(daemon.log, /client connected/);
    assert.match(web.log, /web request refused reason=origin/);
    assert.match(web.log, /web request refused reason=host/);
    assert.match(web.log, /web request refused reason=token/);
  },
);

pageTest(
  "retry, edit, rename, export and a private conversation, against the daemon",
  async () => {
    await using s = await stack();
    const { llm, browser, web } = s;
    const page = await openCanvas(browser, web);
    llm.enqueue(reply({ content: ["First", " answer."] }));
    await ask(page, "What is a socket?");
    await shows(page, LAST, "First answer.");
    await settled(page);

    llm.enqueue(reply({ content: ["Second", " answer."] }));
    await click(page, ".turn.last .retry");
    await shows(page, LAST, "Second answer.");
    await settled(page);
    assert.equal(await page.$$eval(".turn", (nodes) => nodes.length), 1);

    llm.enqueue(reply({ content: ["Edited", " answer."] }));
    await page.focus("#input");
    await page.keyboard.press("ArrowUp");
    assert.equal(
      await page.$eval(
        "#input",
        (node) => (node as unknown as { value: string }).value,
      ),
      "What is a socket?",
    );
    await page.keyboard.type(" On Linux?");
    await page.keyboard.press("Enter");
    await shows(page, LAST, "Edited answer.");
    await settled(page);
    assert.equal(
      await textOf(page, ".turn.last .question .text"),
      "What is a socket? On Linux?",
    );
    assert.equal(await page.$$eval(".turn", (nodes) => nodes.length), 1);

    await page.keyboard.press("F2");
    await page.keyboard.down("Control");
    await page.keyboard.press("a");
    await page.keyboard.up("Control");
    await page.keyboard.type("Sockets");
    await page.keyboard.press("Enter");
    await shows(page, "#title", "Sockets");
    await shows(page, "#list", "Sockets");

    const downloads = await Deno.makeTempDir({ prefix: "da-web-dl-" });
    try {
      const session = await page.createCDPSession();
      await session.send("Browser.setDownloadBehavior", {
        behavior: "allow",
        downloadPath: downloads,
      });
      const read = (name: string) =>
        within(
          (async () => {
            while (true) {
              try {
                return await Deno.readTextFile(`${downloads}/${name}`);
              } catch {
                await new Promise((resolve) => setTimeout(resolve, 50));
              }
            }
          })(),
          `the download ${name}`,
        );
      const id = await page.evaluate(() =>
        (globalThis as unknown as {
          daCanvas: { model: { current: { id: number } } };
        })
          .daCanvas.model.current.id
      );
      await click(page, "#export-md");
      const markdown = await read(`conversation-${id}.md`);
      assert.match(markdown, /Sockets/);
      assert.match(markdown, /What is a socket\? On Linux\?/);
      assert.match(markdown, /Edited answer\./);
      await click(page, "#export-json");
      const json = JSON.parse(await read(`conversation-${id}.json`));
      assert.equal(json.format, "desktop-assistant/1");
      assert.equal(json.title, "Sockets");
      assert.equal(json.turns.length, 1);
      await session.detach();
    } finally {
      await Deno.remove(downloads, { recursive: true });
    }

    await click(page, "#private");
    await shows(page, "#title", "Private conversation");
    assert.ok(await visible(page, "#private-badge"));
    llm.enqueue(reply({ content: ["Kept", " in memory."] }));
    await ask(page, "Something private");
    await shows(page, LAST, "Kept in memory.");
    await settled(page);
    await screenshot(page, "12-private");
    // Never listed: the sidebar still holds the one saved conversation.
    assert.equal(
      await page.$$eval("#list button.conv", (nodes) => nodes.length),
      1,
    );
    assert.deepEqual(browser.errors, []);
  },
);

pageTest(
  "a tool call waits for approval in every tab; a late tab shows it too, and Allow there runs it",
  async () => {
    await using s = await stack([], {
      toolsDirs: [FIXTURE_TOOLS],
      config: 'confirm_tools = ["echo_args"]\n',
    });
    const { llm, browser, web } = s;
    const first = await openCanvas(browser, web);
    llm.enqueue(
      reply({
        toolCalls: [{ name: "echo_args", arguments: '{"text":"hi there"}' }],
      }),
      reply({ content: ["It ", "echoed."] }),
    );
    await ask(first, "Echo something");
    await shows(first, "#confirms", "Run echo_args with");
    await shows(first, "#confirms", '"text":"hi there"');
    await shows(first, "#state", "waiting for your approval");

    const late = await openCanvas(browser, web);
    await shows(late, "#confirms", "Run echo_args with");
    await screenshot(late, "13-approval-late-tab");
    await click(late, "#confirms .allow");
    await first.waitForFunction(
      () => document.querySelector("#confirms")?.hidden === true,
      POLL,
    );
    await shows(first, LAST, "It echoed.");
    await shows(first, ".turn.last .tools", "echo_args");
    await shows(late, LAST, "It echoed.");
    await settled(late);
    assert.deepEqual(browser.errors, []);
  },
);

pageTest(
  "a late tab keeps a reply of another conversation out of the one it shows, and a new conversation never takes its id",
  async () => {
    await using s = await stack();
    const { llm, browser, web } = s;
    const first = await openCanvas(browser, web);

    // New during the first reply of an unsaved conversation: the reply
    // will create a conversation the late tab does not show, and its
    // hello leaves it out (pending null, state thinking).
    const gate = Promise.withResolvers<void>();
    llm.enqueue(gated("Made", gate.promise, " elsewhere."));
    await ask(first, "First question");
    await shows(first, LIVE, "Made");
    await click(first, "#new");
    // The daemon took the `new`: a tab that connects now gets its hello.
    await elsewhere(first);
    const late = await openCanvas(browser, web);
    await elsewhere(late);
    await shows(late, "#elsewhere-text", "another conversation");
    assert.ok(await visible(late, "#stop"), "the stop button shows");
    assert.equal(await late.$$eval(".turn", (nodes) => nodes.length), 0);
    await screenshot(late, "15-late-tab-reply-elsewhere");
    gate.resolve();
    await drawnIdle(late);
    await shows(late, "#list", "First question");
    assert.equal(await late.$$eval(".turn", (nodes) => nodes.length), 0);
    assert.equal(await textOf(late, "#title"), "New conversation");
    assert.ok(await disabled(late, "#rename"), "nothing to rename");
    assert.ok(await disabled(late, "#delete"), "nothing to delete");
    await shows(late, "#notices", "The reply was saved in");

    // A reply in conversation 1, then New: the late tab's hello has
    // `id: null` and `pending.id: 1`.
    await shows(first, "#list", "First question");
    await click(first, "#list button.conv");
    await shows(first, LAST, "Made elsewhere.");
    const second = Promise.withResolvers<void>();
    llm.enqueue(gated("Second", second.promise, " reply."));
    await ask(first, "Second question");
    await shows(first, LIVE, "Second");
    await click(first, "#new");
    await elsewhere(first);
    const third = await openCanvas(browser, web);
    await elsewhere(third);
    await shows(
      third,
      "#elsewhere-text",
      "A reply is streaming in “First question”.",
    );
    assert.equal(await third.$$eval(".turn", (nodes) => nodes.length), 0);
    second.resolve();
    await drawnIdle(third);
    assert.equal(await third.$$eval(".turn", (nodes) => nodes.length), 0);
    assert.equal(await textOf(third, "#title"), "New conversation");
    assert.ok(await disabled(third, "#rename"), "nothing to rename");
    assert.ok(await disabled(third, "#export-md"), "nothing to export");
    assert.equal(
      await third.evaluate(() =>
        (globalThis as unknown as {
          daCanvas: { model: { current: { id: number | null } } };
        }).daCanvas.model.current.id
      ),
      null,
    );
    // The reply is where it was asked.
    await click(third, "#list button.conv");
    await shows(third, LAST, "Second reply.");
    assert.equal(await third.$$eval(".turn", (nodes) => nodes.length), 2);
    assert.deepEqual(browser.errors, []);
  },
);

pageTest(
  "11.2: the context meter says how many earlier turns were sent, live and in a late tab, and a reply cut by the context says so",
  async () => {
    await using s = await stack(
      [],
      { config: "reply_reserve = 512\nhistory_turns = 20\n" },
      { models: [{ id: "/srv/models/tiny.gguf", nCtx: 2048 }] },
    );
    const { llm, daemon, browser, web } = s;
    const page = await openCanvas(browser, web);
    await using client = await SocketClient.connect(daemon.paths.socketPath);
    await client.next("hello");
    // Long turns until the history no longer fits the context whole.
    const ctxOf = (events: Received[]) =>
      events.find((event) => event.type === "ctx") as
        | EventOf<"ctx">
        | undefined;
    let ctx: EventOf<"ctx"> | undefined;
    for (let i = 0; i < 12 && !(ctx && ctx.sent < ctx.total); i++) {
      llm.enqueue(long(150));
      await client.send({ type: "ask", text: `Question ${i}: a long story` });
      ctx = ctxOf(await client.until(isIdle));
    }
    assert.ok(
      ctx && ctx.sent < ctx.total,
      `older turns were left out: ${JSON.stringify(ctx)}`,
    );
    const meter = `context ${
      ctx.used.toLocaleString("en-US")
    } / 2,048 · ${ctx.sent} of ${ctx.total} earlier turns sent`;
    await shows(page, "#ctx-text", meter);
    // A tab opened now reads the same from its hello.
    const late = await openCanvas(browser, web);
    await shows(late, "#ctx-text", meter);

    // A reply that fills the context: the fake ends it with "length".
    llm.enqueue(long(5000));
    await ask(late, "Tell me everything");
    const events = await client.until(isIdle);
    assert.deepEqual(
      events.filter((event) => event.type === "done").map((event) => [
        event.truncated,
        event.truncated_by,
      ]),
      [[true, "context"]],
    );
    await shows(
      late,
      ".turn.last .note",
      "cut short: the model's context is full",
    );
    await shows(
      page,
      ".turn.last .note",
      "cut short: the model's context is full",
    );
    const after = ctxOf(events)!;
    assert.equal(after.used, 2048);
    if (after.sent < after.total) {
      await shows(
        page,
        "#ctx-text",
        `${after.sent} of ${after.total} earlier turns sent`,
      );
    }
    await screenshot(late, "16-context-cut-short");
    assert.deepEqual(browser.errors, []);
  },
);

pageTest(
  "11.5: a tab opened while a call waits in a reply the hello leaves out finds it in hello.confirm and allows it",
  async () => {
    await using s = await stack([], {
      toolsDirs: [FIXTURE_TOOLS],
      config: 'confirm_tools = ["echo_args"]\n',
    });
    const { llm, browser, web } = s;
    const first = await openCanvas(browser, web);
    llm.enqueue(
      reply({
        toolCalls: [{ name: "echo_args", arguments: '{"text":"elsewhere"}' }],
      }),
      reply({ content: ["Echoed ", "elsewhere."] }),
    );
    await ask(first, "Echo from afar");
    await shows(first, "#confirms", "Run echo_args with");
    // New while the call waits: the reply will create a conversation the
    // current one is not, so a hello leaves the reply out.
    await click(first, "#new");
    await elsewhere(first);
    const late = await openCanvas(browser, web);
    await shows(late, "#confirms", '"text":"elsewhere"');
    await elsewhere(late);
    await click(late, "#confirms .allow");
    await first.waitForFunction(
      () => document.querySelector("#confirms")?.hidden === true,
      POLL,
    );
    await drawnIdle(late);
    assert.equal(await late.$$eval(".turn", (nodes) => nodes.length), 0);
    assert.equal(await textOf(late, "#title"), "New conversation");
    await shows(late, "#list", "Echo from afar");
    await click(late, "#list button.conv");
    await shows(late, LAST, "Echoed elsewhere.");
    await shows(late, ".turn.last .tools", "echo_args");
    assert.deepEqual(browser.errors, []);
  },
);
