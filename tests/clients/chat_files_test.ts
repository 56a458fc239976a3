import assert from "node:assert/strict";
import { Renderer } from "../../src/clients/chat_render.ts";
import type { FileView } from "../../src/protocol/protocol.ts";
import { idleHello } from "../support/hello_fixture.ts";

const FILES: FileView[] = [
  { name: "notes.txt", mime: "text/plain", bytes: 2150, kind: "text" },
  { name: "dot.png", mime: "image/png", bytes: 95, kind: "image" },
  {
    name: "paper.pdf",
    mime: "application/pdf",
    bytes: 3_400_000,
    kind: "converted",
  },
];
const SHOWN =
  "[files] notes.txt (2.1 KB, text), dot.png (95 bytes, picture), paper.pdf (3.2 MB, converted to text)\n";

Deno.test("a question's files show under it, with sizes and what each became: live, stored and in flight", () => {
  const live = new Renderer({ colors: false, think: true });
  assert.equal(
    live.event({ type: "user", text: "What are these?", files: FILES }),
    "> What are these?\n" + SHOWN,
  );
  // Without files nothing is added.
  assert.equal(
    live.event({ type: "user", text: "And this?" }),
    "> And this?\n",
  );
  const opened = new Renderer({ colors: false, think: true }).event({
    type: "conversation",
    id: 4,
    turns: [{ user: "Read it", reply: "Done.", tools: [], files: FILES }],
    summary: null,
  });
  assert.equal(
    opened,
    "── conversation #4 · 1 turn ──\n> Read it\n" + SHOWN + "Done.\n\n",
  );
  const greeted = new Renderer({ colors: false, think: true }).hello(idleHello({
    state: "thinking",
    pending: {
      id: null,
      user: "Look",
      reply: "It is",
      think: "",
      tools: [],
      files: FILES.slice(1, 2),
    },
  }));
  assert.equal(
    greeted,
    "desktop-assistant · /help for commands\n> Look\n" +
      "[files] dot.png (95 bytes, picture)\nIt is",
  );
});

Deno.test("a file's name from the daemon cannot drive the terminal", () => {
  const out = new Renderer({ colors: false, think: true }).event({
    type: "user",
    text: "Hm",
    files: [{
      name: "x\x1b[2J\ny.txt",
      mime: "text/plain",
      bytes: 1,
      kind: "text",
    }],
  });
  // The escape character goes; the rest of the name is text.
  assert.equal(out, "> Hm\n[files] x[2J y.txt (1 byte, text)\n");
});

Deno.test("an export shown in chat wraps between words at a readable width, its code at the screen's", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    columns: () => 40,
  });
  const prose =
    "The reply went on for quite a while about the weather in Lisbon and Porto.";
  const code = "x".repeat(50);
  const out = renderer.block(`# Trip\n\n${prose}\n\n\`\`\`\n${code}\n\`\`\`\n`);
  const lines = out.split("\n").slice(0, -1);
  for (const line of lines) assert.ok(line.length <= 40, line);
  // Every word of the prose is whole on some line.
  for (const word of prose.split(" ")) {
    assert.ok(lines.some((line) => line.split(" ").includes(word)), word);
  }
  assert.deepEqual(lines.slice(-4), [
    "```",
    "x".repeat(40),
    "x".repeat(10),
    "```",
  ]);
  // A transcript keeps every line whole.
  const whole = new Renderer({ colors: false, think: true }).block(prose);
  assert.equal(whole, prose + "\n");
});
