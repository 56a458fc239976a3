import assert from "node:assert/strict";
import { Renderer } from "../../src/clients/chat_render.ts";
import { Screen } from "../support/screen.ts";
import { textWidth } from "../../src/clients/terminal_text.ts";
import type { BackendView, Event } from "../../src/protocol/protocol.ts";
import { idleHello } from "../support/hello_fixture.ts";

Deno.test("hello shows the meter when the last request left turns out", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
  });
  const out = renderer.hello(idleHello({
    ctx_used: 2000,
    ctx_max: 2048,
    ctx_sent: 1,
    ctx_total: 2,
    id: 2,
    turns: [
      { user: "A", reply: "a", tools: [] },
      { user: "B", reply: "b", tools: [] },
    ],
  }));
  assert.equal(
    out,
    "desktop-assistant · /help for commands\n" +
      "── conversation #2 · 2 turns ──\n> A\na\n\n> B\nb\n\n" +
      "context 2,000/2,048 · 1 of 2 turns\n",
  );
});

Deno.test("hello shows the conversation and the reply in flight", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
  });
  const out = renderer.hello(idleHello({
    state: "tool",
    tool: "date",
    model: "/srv/models/tiny.gguf",
    id: 7,
    turns: [{ user: "Hi", reply: "Hello.", tools: [] }],
    pending: {
      id: 7,
      user: "Time?",
      reply: "",
      think: "Check.",
      tools: ["date"],
    },
  }));
  assert.equal(
    out,
    "desktop-assistant · tiny · /help for commands\n" +
      "── conversation #7 · 1 turn ──\n> Hi\nHello.\n\n" +
      "> Time?\n(thinking) Check.\n[tool] date …",
  );
  assert.equal(renderer.atLineStart, false);
  assert.equal(
    renderer.event({ type: "tool", name: "date", done: true }),
    " done\n",
  );
});

Deno.test("hello leaves out a reply in flight that belongs to another conversation", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
  });
  const out = renderer.hello(idleHello({
    state: "thinking",
    pending: { id: 3, user: "Elsewhere?", reply: "Par", think: "", tools: [] },
  }));
  assert.equal(
    out,
    "desktop-assistant · /help for commands\n" +
      "[a reply is streaming in conversation #3]\n",
  );
  // A call of that reply waiting for approval is asked all the same:
  // approvals are shared, whichever conversation is shown.
  const confirm = { call: "c9", tool: "weather", args: { place: "Oslo" } };
  const asked = new Renderer({
    colors: false,
    think: true,
  }).hello(idleHello({
    state: "confirm",
    tool: "weather",
    id: 7,
    pending: {
      id: 3,
      user: "Elsewhere?",
      reply: "",
      think: "",
      tools: [],
      confirm,
    },
    confirm,
  }));
  assert.ok(
    asked.endsWith('run weather {"place": "Oslo"}? [y/N] '),
    JSON.stringify(asked),
  );
});

Deno.test("lists, results with marked matches, and a deleted conversation", () => {
  const renderer = new Renderer({
    colors: true,
    think: true,
  });
  const results = renderer.event({
    type: "results",
    items: [{
      id: 3,
      title: "Trip to Rome",
      snippet: "the **città** at\nnight",
    }],
  });
  assert.equal(
    results,
    "\x1b[1m    #3\x1b[0m  Trip to Rome\n" +
      "        the \x1b[1m\x1b[33mcittà\x1b[0m at night\n",
  );
  const plain = new Renderer({
    colors: false,
    think: true,
  });
  assert.equal(
    plain.event({ type: "conversations", items: [] }, { deleted: 3 }),
    "deleted conversation #3\nno conversations yet\n",
  );
  assert.equal(plain.event({ type: "results", items: [] }), "no matches\n");
});

Deno.test("a conversation switch on a terminal scrolls the old one into the scrollback, erasing nothing", async () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    screenRows: () => 4,
  });
  const shown = renderer.event({ type: "user", text: "Old question" }) +
    renderer.event({ type: "token", delta: "Old answer." }) +
    renderer.event({ type: "done", id: 1, stopped: false });
  const switched = renderer.event({
    type: "conversation",
    id: null,
    turns: [],
  });
  assert.equal(switched, "\n\n\n\x1b[H── new conversation ──\n");
  using screen = new Screen({ columns: 40, rows: 4 });
  await screen.write(shown + switched);
  assert.deepEqual(screen.text(), [
    "> Old question",
    "Old answer.",
    "",
    "── new conversation ──",
  ]);
  assert.equal(screen.cursorLine, 4);
  // A transcript has no screen to clear: the header follows.
  assert.equal(
    new Renderer({ colors: false, think: true }).event({
      type: "conversation",
      id: null,
      turns: [],
    }),
    "── new conversation ──\n",
  );
});

Deno.test("a private conversation says so in its header, on connect and on switching", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
  });
  const hello = renderer.hello(idleHello({
    turns: [{ user: "Secret?", reply: "Kept in memory.", tools: [] }],
    private: true,
  }));
  assert.equal(
    hello,
    "desktop-assistant · /help for commands\n" +
      "── private conversation · not saved · 1 turn ──\n" +
      "> Secret?\nKept in memory.\n\n",
  );
  assert.equal(
    renderer.event({
      type: "conversation",
      id: null,
      turns: [],
      private: true,
    }),
    "── private conversation · not saved ──\n",
  );
  assert.equal(
    renderer.event({ type: "renamed", id: 3, title: "A\nnew  name" }),
    '#3 is now called "A new name"\n',
  );
});

Deno.test("the header line says the backend state; a change shows as a line of its own", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
  });
  const url = "http://127.0.0.1:8080";
  const hello = (backend: BackendView) =>
    renderer.hello(idleHello({
      backend,
    }));
  assert.equal(
    hello({
      state: "up",
      url,
      model: "/srv/models/tiny.gguf",
      ctx_max: 4096,
      message: null,
    }),
    "desktop-assistant · backend up · tiny · /help for commands\n",
  );
  assert.equal(
    hello({
      state: "down",
      url,
      model: null,
      ctx_max: null,
      message: `no connection to ${url} (connection refused)`,
    }),
    `desktop-assistant · backend down: no connection to ${url} (connection refused) · /help for commands\n`,
  );
  assert.equal(
    hello({ state: "unknown", url, model: null, ctx_max: null, message: null }),
    "desktop-assistant · backend unknown · /help for commands\n",
  );
  assert.equal(
    renderer.event({
      type: "backend",
      state: "loading",
      url,
      model: null,
      ctx_max: null,
      message: "llama-server is loading its model",
    }),
    "backend loading: llama-server is loading its model\n",
  );
  const colored = new Renderer({
    colors: true,
    think: true,
  });
  assert.equal(
    colored.event({
      type: "backend",
      state: "down",
      url,
      model: null,
      ctx_max: null,
      message: "no answer from x within 5 s\x1b[2J",
    }),
    "\x1b[31mbackend down: no answer from x within 5 s[2J\x1b[0m\n",
  );
});

Deno.test("the backend line shows again only when what it says changes", () => {
  const renderer = new Renderer({ colors: false, think: true });
  const url = "http://127.0.0.1:8080";
  const up = {
    state: "up" as const,
    url,
    model: "/m/tiny.gguf",
    ctx_max: 4096,
    message: null,
  };
  renderer.hello(idleHello({
    backend: up,
  }));
  // The context size and the url are not on the line: nothing to show.
  assert.equal(renderer.event({ type: "backend", ...up, ctx_max: 8192 }), "");
  assert.equal(
    renderer.event({ type: "backend", ...up, url: "http://[::1]:8080" }),
    "",
  );
  const down = {
    type: "backend" as const,
    state: "down" as const,
    url,
    model: null,
    ctx_max: null,
    message: "no connection",
  };
  assert.equal(renderer.event(down), "backend down: no connection\n");
  assert.equal(renderer.event(down), "");
  assert.equal(
    renderer.event({ type: "backend", ...up }),
    "backend up · tiny\n",
  );
});

Deno.test("at 40 columns every line chat draws fits, broken between words", () => {
  const renderer = new Renderer({
    colors: true,
    think: true,
    columns: () => 40,
  });
  const url = "http://127.0.0.1:8080";
  const events: Event[] = [
    { type: "user", text: "What is the weather like in Lisbon this weekend?" },
    { type: "tool", name: "weather", done: false },
    { type: "tool", name: "weather", done: true },
    {
      type: "done",
      id: 3,
      stopped: true,
      truncated: true,
      truncated_by: "max_tokens",
    },
    { type: "ctx", id: 1, used: 3900, max: 4096, sent: 6, total: 14 },
    {
      type: "backend",
      state: "down",
      url,
      model: null,
      ctx_max: null,
      message: `no connection to ${url} (connection refused)`,
    },
    {
      type: "error",
      code: "llama_http_error",
      message: "llama-server answered 503: Loading model, please wait",
      turn: true,
    },
    {
      type: "conversations",
      items: [{ id: 12, title: "A title of a good many words", updated: 0 }],
    },
    {
      type: "results",
      items: [{
        id: 12,
        title: "A title of a good many words",
        snippet: "the **weather** in Lisbon this weekend is fine and dry",
      }],
    },
    { type: "renamed", id: 12, title: "Weekend weather in Lisbon, Portugal" },
    { type: "conversation", id: 12, turns: [] },
  ];
  const out = renderer.hello(idleHello({
    backend: {
      state: "up",
      url,
      model: "/m/tiny.gguf",
      ctx_max: 4096,
      message: null,
    },
  })) + events.map((event) => renderer.event(event)).join("") +
    renderer.confirm({
      call: "c1",
      tool: "weather",
      args: { place: "Lisbon, Portugal", days: ["Saturday", "Sunday"] },
    }) + renderer.approved(false, false) +
    renderer.info("usage: /rename N title (N a number from /list)");
  // deno-lint-ignore no-control-regex
  const lines = out.replace(/\x1b\[[0-9;]*m/g, "").split("\n");
  for (const line of lines) {
    assert.ok(
      textWidth(line) <= 40,
      `${JSON.stringify(line)} is wider than 40`,
    );
  }
  const words = new Set(lines.join(" ").split(/\s+/));
  for (
    const word of [
      "desktop-assistant",
      "Lisbon",
      "weekend?",
      "(connection",
      "refused)",
      'Portugal"',
      '{"place":',
      "[y/N]",
      "max_tokens]",
      "(answered",
    ]
  ) assert.ok(words.has(word), `${word} was cut:\n${lines.join("\n")}`);
});

Deno.test("the meter says how many earlier turns the summary covers", () => {
  const renderer = new Renderer({ colors: false, think: true });
  assert.equal(
    renderer.event({
      type: "ctx",
      id: 1,
      used: 3900,
      max: 4096,
      sent: 6,
      total: 14,
      summarized: 8,
    }),
    "context 3,900/4,096 · 6 of 14 turns · 8 in the summary\n",
  );
  assert.equal(
    renderer.event({
      type: "ctx",
      id: 1,
      used: 900,
      max: 4096,
      sent: 2,
      total: 2,
      summarized: 0,
    }),
    "",
  );
});

Deno.test("info drops control characters: what it says may name a local file", () => {
  const renderer = new Renderer({ colors: false, think: true });
  assert.equal(
    renderer.info("attached a\x1b[31mb.txt (1 byte, text/plain)"),
    "attached a[31mb.txt (1 byte, text/plain)\n",
  );
  assert.equal(
    renderer.info([{ text: "x\x1b]0;title\x07y", indent: "" }]),
    "x]0;titley\n",
  );
});
