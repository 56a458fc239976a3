import assert from "node:assert/strict";
import { Renderer } from "../../src/clients/chat_render.ts";
import { ChatSession } from "../../src/clients/chat_session.ts";
import type { DaemonClient } from "../../src/clients/client.ts";
import type { Command, Event } from "../../src/protocol.ts";

/** A session over a stand-in connection that records what it sends. */
function session(): { chat: ChatSession; sent: Command[] } {
  const sent: Command[] = [];
  const client = {
    hello: {
      type: "hello",
      state: "idle",
      model: null,
      ctx_used: null,
      ctx_max: null,
      id: null,
      turns: [],
      pending: null,
    },
    send: (command: Command) => {
      sent.push(command);
      return Promise.resolve();
    },
  } as unknown as DaemonClient;
  const chat = new ChatSession({
    client,
    renderer: new Renderer({
      colors: false,
      think: true,
      clearOnSwitch: false,
    }),
    editor: null,
    out: () => {},
    err: () => {},
    prompt: "> ",
    columns: () => 80,
  });
  return { chat, sent };
}

Deno.test("chat waits for the turn of its own question, not one echoed before it", () => {
  const { chat, sent } = session();
  assert.equal(chat.ready, true);
  chat.submit("Mine?");
  assert.deepEqual(sent, [{ type: "ask", text: "Mine?" }]);
  const events: Event[] = [
    // Another client's question, then its stop by ours.
    { type: "user", text: "Theirs?" },
    { type: "state", state: "thinking" },
    { type: "done", id: null, stopped: true },
    { type: "state", state: "idle" },
  ];
  for (const event of events) chat.onEvent(event);
  assert.equal(chat.ready, false, "our question is still to come");
  chat.onEvent({ type: "user", text: "Mine?" });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: "Yours." });
  assert.equal(chat.ready, false);
  chat.onEvent({ type: "done", id: 1, stopped: false });
  chat.onEvent({ type: "state", state: "idle" });
  assert.equal(chat.ready, true);
});
