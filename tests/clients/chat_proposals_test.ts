/**
 * The facts the assistant proposes, as chat asks them over a stand-in
 * connection: one at a time at an empty prompt, y, N or e; closed when
 * another client answers; never taking a line or a key meant as a question.
 */
import assert from "node:assert/strict";
import type { ProposalView } from "../../src/protocol/protocol.ts";
import { playTurn, promptShown, session } from "./chat_fixture.ts";

function fact(proposal: string, text: string): ProposalView {
  return { proposal, text, source: { id: 1, turn: 0 } };
}

const QUESTION = /remember "([^"]*)"\? \[y\/N\/e\] $/;

/** The fact the last line of the screen asks about, or null when it asks none. */
function asked(screen: string): string | null {
  return QUESTION.exec(screen)?.[1] ?? null;
}

function type(chat: ReturnType<typeof session>["chat"], text: string) {
  for (const char of text) chat.onKey({ name: "text", text: char });
}

Deno.test("proposals are asked one at a time at an empty prompt: y keeps, Enter refuses", () => {
  const { chat, sent, screen } = session({ editor: true });
  chat.onEvent({
    type: "proposed",
    items: [fact("p1", "Prefers metric units"), fact("p2", "Has a cat")],
  });
  assert.equal(asked(screen()), "Prefers metric units");
  assert.equal(chat.asking, true);
  chat.onKey({ name: "text", text: "y" });
  assert.deepEqual(sent.at(-1), {
    type: "accept",
    proposal: "p1",
    ref: "ref-1",
  });
  // The answer shows once the daemon says which answer counted.
  assert.equal(asked(screen()), "Prefers metric units");
  chat.onEvent({
    type: "decided",
    proposal: "p1",
    accepted: true,
    ref: "ref-1",
  });
  assert.match(screen(), /\[y\/N\/e\] kept\n/);
  assert.equal(asked(screen()), "Has a cat");
  chat.onKey({ name: "enter" });
  assert.deepEqual(sent.at(-1), {
    type: "refuse",
    proposal: "p2",
    ref: "ref-2",
  });
  chat.onEvent({
    type: "decided",
    proposal: "p2",
    accepted: false,
    ref: "ref-2",
  });
  assert.match(screen(), /"Has a cat"\? \[y\/N\/e\] refused\n/);
  assert.equal(chat.asking, false);
  assert.equal(promptShown(screen()), "> ");
  assert.equal(sent.length, 2);
});

Deno.test("e puts the fact on the line to change; Enter keeps it as changed, Ctrl-C asks it again", () => {
  const { chat, sent, screen, editor } = session({ editor: true });
  chat.onEvent({ type: "proposed", items: [fact("p1", "Lives in Oslo")] });
  chat.onKey({ name: "text", text: "e" });
  assert.match(screen(), /\[y\/N\/e\] edit\n/);
  assert.equal(editor!.line, "Lives in Oslo");
  assert.equal(promptShown(screen()), "remember> Lives in Oslo");
  assert.deepEqual(sent, []);
  // Ctrl-C gives up the change: the fact is asked again.
  chat.interrupt();
  assert.equal(chat.ended, false);
  assert.equal(editor!.line, "");
  assert.equal(asked(screen()), "Lives in Oslo");
  chat.onKey({ name: "text", text: "e" });
  chat.onKey({ name: "kill-start" });
  type(chat, "Lives in Bergen");
  chat.onKey({ name: "enter" });
  assert.deepEqual(sent, [{
    type: "accept",
    proposal: "p1",
    text: "Lives in Bergen",
    ref: "ref-1",
  }]);
  chat.onEvent({
    type: "decided",
    proposal: "p1",
    accepted: true,
    ref: "ref-1",
  });
  // The line as changed stays on screen, the answer under it.
  assert.match(screen(), /remember> Lives in Bergen[^\n]*\r\n\[kept\]\n/);
  assert.equal(promptShown(screen()), "> ");
  // Kept as changed, it is no question and no line to recall.
  assert.equal(editor!.line, "");
});

Deno.test("a fact changed to something the daemon refuses is said, and asked again", () => {
  const { chat, sent, screen } = session({ editor: true });
  chat.onEvent({ type: "proposed", items: [fact("p1", "Likes tea")] });
  chat.onKey({ name: "text", text: "e" });
  type(chat, "x".repeat(500));
  chat.onKey({ name: "enter" });
  assert.equal(sent.at(-1)?.type, "accept");
  chat.onEvent({
    type: "error",
    code: "bad_memory",
    message: "bad memory",
    ref: "ref-1",
  });
  assert.match(screen(), /error: not kept: a memory is 1 to 500 characters\n/);
  assert.equal(asked(screen()), "Likes tea");
});

Deno.test("a proposal never takes a line being typed, nor keys while a reply streams", () => {
  const { chat, sent, screen, editor } = session({ editor: true });
  type(chat, "Wh");
  chat.onEvent({ type: "proposed", items: [fact("p1", "Likes tea")] });
  assert.equal(asked(screen()), null);
  assert.equal(chat.asking, false);
  // The next keys go on the line, y included.
  type(chat, "y now?");
  assert.equal(editor!.line, "Why now?");
  chat.onKey({ name: "enter" });
  assert.deepEqual(sent, [{ type: "ask", text: "Why now?", ref: "ref-1" }]);
  chat.onEvent({ type: "user", text: "Why now?", ref: "ref-1" });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: "Because." });
  assert.equal(asked(screen()), null);
  // Typed during the reply: queued, not an answer.
  type(chat, "n");
  chat.onKey({ name: "enter" });
  chat.onEvent({ type: "done", id: 1, stopped: false, ref: "ref-1" });
  chat.onEvent({ type: "state", state: "idle" });
  // The line typed ahead runs first; the proposal waits for its turn.
  assert.deepEqual(sent.at(-1), { type: "ask", text: "n", ref: "ref-2" });
  assert.equal(asked(screen()), null);
  playTurn(chat, "n", "ref-2", "Sure.");
  assert.equal(asked(screen()), "Likes tea");
  assert.equal(sent.filter((c) => c.type === "accept").length, 0);
});

Deno.test("a turn that starts while a proposal is asked puts it off until the prompt is free again", () => {
  const { chat, sent, screen } = session({ editor: true });
  chat.onEvent({ type: "proposed", items: [fact("p1", "Likes tea")] });
  // Another client asks something: the reply has the screen.
  chat.onEvent({ type: "user", text: "Weather?", ref: "page-1" });
  assert.match(screen(), /\[y\/N\/e\] asked again later\n> Weather\?\n/);
  assert.equal(chat.asking, false);
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: "Rain." });
  chat.onEvent({ type: "done", id: 1, stopped: false, ref: "page-1" });
  chat.onEvent({ type: "state", state: "idle" });
  assert.equal(asked(screen()), "Likes tea");
  chat.onKey({ name: "text", text: "n" });
  assert.deepEqual(sent, [{ type: "refuse", proposal: "p1", ref: "ref-1" }]);
});

Deno.test("a proposal answered elsewhere closes the question, and one still queued goes quietly", () => {
  const { chat, sent, screen } = session({
    editor: true,
    hello: { proposed: [fact("p1", "Likes tea"), fact("p2", "Has a cat")] },
  });
  // Those waiting when the chat connects are asked too.
  assert.equal(asked(screen()), "Likes tea");
  chat.onEvent({ type: "decided", proposal: "p2", accepted: true });
  assert.equal(asked(screen()), "Likes tea");
  chat.onEvent({
    type: "decided",
    proposal: "p1",
    accepted: false,
    ref: "page-3",
  });
  assert.match(screen(), /\[y\/N\/e\] refused \(answered elsewhere\)\n/);
  assert.equal(chat.asking, false);
  assert.doesNotMatch(screen(), /Has a cat/);
  assert.equal(promptShown(screen()), "> ");
  assert.deepEqual(sent, []);
});

Deno.test("an answer that comes after another client's is quiet; one the daemon no longer knows closes the question", () => {
  const { chat, screen } = session({ editor: true });
  chat.onEvent({ type: "proposed", items: [fact("p1", "Likes tea")] });
  chat.onKey({ name: "text", text: "y" });
  chat.onEvent({ type: "decided", proposal: "p1", accepted: true, ref: "x" });
  chat.onEvent({
    type: "error",
    code: "no_such_proposal",
    message: "no such proposal",
    ref: "ref-1",
  });
  assert.match(screen(), /\[y\/N\/e\] kept \(answered elsewhere\)\n/);
  assert.doesNotMatch(screen(), /error/);
  chat.onEvent({ type: "proposed", items: [fact("p2", "Has a cat")] });
  chat.onKey({ name: "text", text: "n" });
  chat.onEvent({
    type: "error",
    code: "no_such_proposal",
    message: "no such proposal",
    ref: "ref-2",
  });
  assert.match(screen(), /\[y\/N\/e\] answered elsewhere\n/);
  assert.doesNotMatch(screen(), /error/);
  assert.equal(chat.ready, true);
  assert.equal(promptShown(screen()), "> ");
});

Deno.test("piped input is never asked a proposal: it is shown, and the next line stays a question", () => {
  const { chat, sent, screen } = session({
    hello: { proposed: [fact("p1", "Likes tea")] },
  });
  assert.match(
    screen(),
    /\[proposed to remember: "Likes tea"; a chat on a terminal or the page can keep it\]\n/,
  );
  chat.onEvent({ type: "proposed", items: [fact("p2", "Has a cat")] });
  assert.match(screen(), /proposed to remember: "Has a cat"/);
  assert.equal(chat.asking, false);
  chat.submit("y");
  assert.deepEqual(sent, [{ type: "ask", text: "y", ref: "ref-1" }]);
});

Deno.test("a call waiting for approval comes before a proposal, which waits for the prompt", () => {
  const { chat, sent, screen } = session({ editor: true });
  chat.onEvent({ type: "proposed", items: [fact("p1", "Likes tea")] });
  chat.onEvent({ type: "state", state: "confirm", tool: "weather" });
  chat.onEvent({
    type: "confirm",
    call: "c1",
    tool: "weather",
    args: { place: "Oslo" },
  });
  assert.match(
    screen(),
    /\[y\/N\/e\] asked again later\nrun weather \{"place": "Oslo"\}\? \[y\/N\] $/,
  );
  chat.onKey({ name: "text", text: "y" });
  assert.deepEqual(sent, [{ type: "approve", call: "c1", allow: true }]);
  chat.onEvent({ type: "approved", call: "c1", allow: true });
  chat.onEvent({ type: "done", id: 1, stopped: false });
  chat.onEvent({ type: "state", state: "idle" });
  assert.equal(asked(screen()), "Likes tea");
});

Deno.test("typing a question as a proposal is asked sets the proposal aside: the keys go on the line", () => {
  const { chat, sent, screen, editor } = session({ editor: true });
  chat.onEvent({ type: "proposed", items: [fact("p1", "Likes tea")] });
  // A key that is no answer and types nothing is refused with a bell.
  chat.onKey({ name: "up" });
  assert.ok(screen().endsWith("\x07"), JSON.stringify(screen()));
  assert.equal(chat.asking, true);
  type(chat, "What now?");
  // The bell stays where it rang; the question closes after it.
  assert.ok(screen().includes("[y/N/e] \x07asked again later\n"), screen());
  assert.equal(editor!.line, "What now?");
  assert.equal(promptShown(screen()), "> What now?");
  chat.onKey({ name: "enter" });
  assert.deepEqual(sent, [{ type: "ask", text: "What now?", ref: "ref-1" }]);
  playTurn(chat, "What now?", "ref-1", "Tea.");
  assert.equal(asked(screen()), "Likes tea");
});
