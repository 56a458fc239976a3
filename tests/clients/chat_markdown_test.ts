/**
 * Markdown in the terminal clients, end to end: the fake llama-server
 * streams a Markdown answer token by token, the client runs on a
 * pseudo-terminal (util-linux `script`) or with piped stdout, and what the
 * terminal shows is read back through a terminal emulator.
 */
import assert from "node:assert/strict";
import { Renderer } from "../../src/clients/chat_render.ts";
import { renderMarkdown } from "../../src/clients/markdown.ts";
import { markdownDrawing } from "../../src/clients/markdown_view.ts";
import type { Event } from "../../src/protocol/protocol.ts";
import {
  clientArgs,
  clientEnv,
  ClientProcess,
  hasScript,
  PTY_SKIP,
  runClient,
  startDaemon,
  untimed,
} from "../support/client_harness.ts";
import { FakeLlm, hold, reply } from "../support/fake_llm.ts";
import type { Daemon } from "../support/daemon_harness.ts";
import { MARKDOWN_REPLY, modelTokens } from "../support/markdown_reply.ts";
import { Screen } from "../support/screen.ts";

const SIZE = { columns: 80, rows: 40 };

/** Environment with colours on: NO_COLOR unset. */
function colorEnv(runtimeDir: string): Record<string, string> {
  const env = clientEnv(runtimeDir);
  delete env.NO_COLOR;
  return env;
}

/** What a terminal of SIZE shows for this output. */
async function screenOf(output: string): Promise<Screen> {
  const screen = new Screen(SIZE);
  await screen.write(output);
  return screen;
}

/** The screen lines of the reply drawn whole at SIZE's width. */
async function drawnWhole(text: string): Promise<string[]> {
  using screen = await screenOf(renderMarkdown(text, SIZE.columns));
  return screen.lines();
}

/** Every line after the one showing the question (the prompt, left with Ctrl-D, shows nothing). */
function linesAfter(screen: Screen, question: string): string[] {
  const at = screen.text().lastIndexOf(`> ${question}`);
  assert.notEqual(at, -1, `"> ${question}" is not on screen`);
  // The timings line after a reply is drawn, and tested, by the renderer's tests.
  return screen.lines().slice(at + 1).filter((line) =>
    untimed(`${line}\n`) !== ""
  );
}

/** `chat` on a pseudo-terminal of SIZE, colours on unless `env` says otherwise. */
function ptyChat(
  daemon: Daemon,
  args: string[] = [],
  env = colorEnv(daemon.paths.runtimeDir),
): ClientProcess {
  return ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["chat", ...args]),
    { env, pty: true, size: SIZE },
  );
}

/** Types a line at the prompt (the first one, or the one shown before `from`); resolves past the prompt shown after `shown`. */
async function ask(
  chat: ClientProcess,
  line: string,
  shown: string,
  from?: number,
): Promise<number> {
  const at = from ?? await chat.waitFor(/> \r/);
  await chat.type(`${line}\r`);
  return await chat.waitFor(/> \r/, await chat.waitFor(shown, at));
}

/** Leaves with Ctrl-D at the prompt. */
async function leave(chat: ClientProcess): Promise<void> {
  await chat.type("\x04");
  assert.equal(await chat.exit(), 0);
}

Deno.test({
  name:
    `chat on a terminal draws a streamed Markdown answer: highlighted, with borders, ending as the answer drawn whole${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: modelTokens(MARKDOWN_REPLY) }));
    await using daemon = await startDaemon(llm.url);
    await using chat = ptyChat(daemon);
    await ask(chat, "How do I read a file?", "for more.");
    await leave(chat);

    const whole = await drawnWhole(MARKDOWN_REPLY);
    using screen = await screenOf(chat.stdout);
    assert.deepEqual(linesAfter(screen, "How do I read a file?"), whole);
    // Highlighting by the fence's language, table borders, the link's URL.
    assert.equal(screen.styleOf("export"), "35");
    assert.equal(screen.styleOf("// Reads the config"), "2");
    const text = screen.text();
    assert.ok(
      text.some((line) => line.startsWith("┌─────────┬")),
      text.join("\n"),
    );
    assert.ok(
      text.includes(
        "See the manual (https://docs.deno.com/runtime/) for more.",
      ),
    );
    assert.ok(!text.some((line) => line.includes("```")));
  },
});

Deno.test({
  name:
    `mid-answer, finished blocks are drawn, a code block's complete lines highlighted, the line arriving shown as sent${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    const cut = MARKDOWN_REPLY.indexOf("...DEFAULTS") + "...DEF".length;
    const sent = MARKDOWN_REPLY.slice(0, cut);
    await using llm = await FakeLlm.start();
    llm.enqueue(hold(modelTokens(sent)));
    await using daemon = await startDaemon(llm.url);
    await using chat = ptyChat(daemon);
    let at = await chat.waitFor(/> \r/);
    await chat.type("Half an answer?\r");
    at = await chat.waitFor("return { ...DEF", at);
    {
      using screen = await screenOf(chat.stdout);
      const complete = sent.slice(0, sent.lastIndexOf("\n"));
      // The unclosed fence's closing rule is not drawn yet.
      const drawn = (await drawnWhole(complete)).slice(0, -1);
      assert.deepEqual(linesAfter(screen, "Half an answer?"), [
        ...drawn,
        "  return { ...DEF",
      ]);
    }
    await chat.type("\x03");
    at = await chat.waitFor("[stopped]", at);
    await chat.waitFor(/> \r/, at);
    await leave(chat);
    // Stopped there, the answer is drawn whole as far as it came.
    using screen = await screenOf(chat.stdout);
    assert.deepEqual(linesAfter(screen, "Half an answer?"), [
      ...await drawnWhole(sent),
      "\x1b[0;2m[stopped]\x1b[0m",
    ]);
  },
});

Deno.test({
  name:
    `NO_COLOR on a terminal, a piped stdout and ask show the answer byte-exact as sent${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start({
      defaultScript: reply({ content: modelTokens(MARKDOWN_REPLY) }),
    });
    await using daemon = await startDaemon(llm.url);
    const socket = daemon.paths.socketPath;
    const runtime = daemon.paths.runtimeDir;

    const piped = await runClient(
      clientArgs(socket, ["chat"]),
      colorEnv(runtime),
      "/help\nPiped?\n/raw\n",
    );
    assert.equal(piped.code, 0);
    assert.match(
      untimed(piped.stdout),
      /\n\/raw {14}replies as sent, or their Markdown/,
    );
    assert.match(
      untimed(piped.stdout),
      /\nchat --raw starts with replies as sent; ask --render/,
    );
    assert.ok(
      untimed(piped.stdout).endsWith(
        `\n> Piped?\n${MARKDOWN_REPLY}\n\n> /raw\n` +
          "Markdown is drawn only on a colour terminal: replies show as sent\n",
      ),
      untimed(piped.stdout),
    );

    for (const render of [[], ["--render"]]) {
      const asked = await runClient(
        clientArgs(socket, ["ask", ...render, "Asked?"]),
        colorEnv(runtime),
      );
      assert.equal(asked.code, 0);
      assert.equal(asked.stdout, `${MARKDOWN_REPLY}\n`);
    }

    await using plain = ptyChat(daemon, [], clientEnv(runtime));
    await ask(plain, "No colour?", "for more.");
    await leave(plain);
    // The terminal's driver turns each newline into CR LF.
    const shown = untimed(plain.stdout.replaceAll("\r\n", "\n"));
    assert.ok(shown.includes(`\n${MARKDOWN_REPLY}\n\n`), shown);

    await using asked = ClientProcess.spawn(
      clientArgs(socket, ["ask", "On a terminal?"]),
      { env: colorEnv(runtime), pty: true, size: SIZE },
    );
    assert.equal(await asked.exit(), 0);
    assert.equal(asked.stdout.replaceAll("\r\n", "\n"), `${MARKDOWN_REPLY}\n`);
  },
});

Deno.test({
  name:
    `ask --render draws the answer on a colour terminal as chat does${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: modelTokens(MARKDOWN_REPLY) }));
    await using daemon = await startDaemon(llm.url);
    await using asked = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["ask", "--render", "Drawn?"]),
      { env: colorEnv(daemon.paths.runtimeDir), pty: true, size: SIZE },
    );
    assert.equal(await asked.exit(), 0);
    using screen = await screenOf(asked.stdout);
    assert.deepEqual(screen.lines(), await drawnWhole(MARKDOWN_REPLY));
  },
});

Deno.test({
  name:
    `chat --raw shows answers as sent until /raw draws them again${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start({
      defaultScript: reply({ content: modelTokens(MARKDOWN_REPLY) }),
    });
    await using daemon = await startDaemon(llm.url);
    await using chat = ptyChat(daemon, ["--raw"]);
    let at = await ask(chat, "As sent?", "for more.");
    const raw = untimed(chat.stdout.replaceAll("\r\n", "\n"));
    assert.ok(raw.includes(`\n${MARKDOWN_REPLY}\n\n`), raw);
    at = await ask(chat, "/raw", "Markdown drawn from the next reply on", at);
    await ask(chat, "Drawn?", "for more.", at);
    await leave(chat);
    const whole = await drawnWhole(MARKDOWN_REPLY);
    using screen = await screenOf(chat.stdout);
    assert.deepEqual(linesAfter(screen, "Drawn?"), whole);
  },
});

Deno.test({
  name:
    `an escape sequence inside a code block reaches the screen as visible text${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    const answer = [
      "Try:",
      "```sh",
      "printf '\x1b[31mred\x1b[0m\x1b]0;owned\x07'",
      "```",
    ].join("\n");
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: modelTokens(answer) }));
    await using daemon = await startDaemon(llm.url);
    await using chat = ptyChat(daemon);
    await ask(chat, "Colours?", "Try:");
    await leave(chat);
    assert.ok(!chat.stdout.includes("\x1b[31m"), "the model's SGR was obeyed");
    assert.ok(!chat.stdout.includes("\x1b]0;"), "the model's title was obeyed");
    using screen = await screenOf(chat.stdout);
    assert.ok(
      screen.text().includes("printf '␛[31mred␛[0m␛]0;owned␇'"),
      screen.text().join("\n"),
    );
    assert.deepEqual(
      linesAfter(screen, "Colours?"),
      await drawnWhole(answer),
    );
  },
});

function renderer(options: { raw?: boolean; drawing?: boolean } = {}) {
  return new Renderer({
    colors: true,
    think: true,
    markdown: options.drawing === false
      ? null
      : markdownDrawing({ columns: () => 60, rows: () => 24 }),
    ...(options.raw === undefined ? {} : { raw: options.raw }),
  });
}

Deno.test("the renderer draws a streamed reply and an opened conversation's replies; a tool line ends the reply's drawing first", async () => {
  const chat = renderer();
  const events: Event[] = [
    { type: "user", text: "Q" },
    { type: "token", delta: "Let me **check**" },
    { type: "tool", name: "date", done: false },
    { type: "tool", name: "date", done: true },
    { type: "token", delta: "| a |\n| - |\n| 1 |" },
    { type: "done", id: 1, stopped: false },
    {
      type: "conversation",
      id: 1,
      turns: [{ user: "Q", reply: "Let me **check**| a |", tools: ["date"] }],
    },
  ];
  using screen = new Screen({ columns: 60, rows: 24 });
  await screen.write(events.map((event) => chat.event(event)).join(""));
  assert.deepEqual(screen.text(), [
    "> Q",
    "Let me check",
    "[tool] date … done",
    "┌───┐",
    "│ a │",
    "├───┤",
    "│ 1 │",
    "└───┘",
    "",
    "── conversation #1 · 1 turn ──",
    "> Q",
    "[tools] date",
    "Let me check| a |",
  ]);
  assert.equal(screen.styleOf("check"), "1");
});

Deno.test("raw, or where Markdown cannot be drawn, replies show as sent; /raw toggles only where it can", () => {
  const events: Event[] = [
    { type: "token", delta: "**as** `sent`\n" },
    { type: "done", id: 1, stopped: false },
  ];
  for (const chat of [renderer({ raw: true }), renderer({ drawing: false })]) {
    assert.equal(
      events.map((event) => chat.event(event)).join(""),
      "**as** `sent`\n\n",
    );
  }
  const raw = renderer({ raw: true });
  assert.equal(raw.toggleMarkdown(), true);
  assert.equal(raw.event(events[0]!), "\x1b[1mas\x1b[0m \x1b[33msent\x1b[0m\n");
  assert.equal(raw.toggleMarkdown(), false);
  assert.equal(renderer({ drawing: false }).toggleMarkdown(), null);
});
