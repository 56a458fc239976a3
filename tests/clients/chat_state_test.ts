import assert from "node:assert/strict";
import { ChatState } from "../../src/clients/chat_state.ts";
import type { HelloEvent } from "../../src/clients/client.ts";
import { idleHello } from "../support/hello_fixture.ts";

const HELLO: HelloEvent = idleHello({
  id: 2,
  turns: [{ user: "First?", reply: "Yes.", tools: [] }],
});

Deno.test("the last question follows finished turns of the conversation shown, not stopped ones", () => {
  const state = new ChatState(HELLO);
  assert.equal(state.lastQuestion, "First?");
  state.apply({ type: "user", text: "Second?" });
  assert.equal(state.state, "thinking");
  state.apply({ type: "done", id: 2, stopped: true });
  assert.equal(state.lastQuestion, "First?");
  state.apply({ type: "user", text: "Third?" });
  state.apply({ type: "done", id: 2, stopped: false });
  assert.equal(state.lastQuestion, "Third?");
  // A reply started elsewhere and finished after a switch is not this one's.
  state.apply({ type: "user", text: "Fourth?" });
  state.apply({ type: "conversation", id: 5, turns: [] });
  state.apply({ type: "done", id: 2, stopped: false });
  assert.equal(state.lastQuestion, null);
});

Deno.test("a waiting call is known from hello or confirm, and gone once decided or the turn ends", () => {
  const confirm = { call: "c1", tool: "weather", args: {} };
  const state = new ChatState({ ...HELLO, state: "confirm", confirm });
  assert.deepEqual(state.confirm, { call: "c1", answered: false });
  state.apply({ type: "approved", call: "other", allow: true });
  assert.deepEqual(state.confirm, { call: "c1", answered: false });
  state.apply({ type: "approved", call: "c1", allow: false });
  assert.equal(state.confirm, null);
  state.apply({ type: "confirm", ...confirm, call: "c2" });
  state.apply({ type: "done", id: 2, stopped: true });
  assert.equal(state.confirm, null);
});

Deno.test("the prompt's tags say private while the conversation shown is", () => {
  const state = new ChatState({ ...HELLO, id: null, private: true });
  assert.deepEqual(state.tags(), ["private"]);
  state.apply({ type: "conversation", id: 3, turns: [] });
  assert.deepEqual(state.tags(), []);
  state.apply({ type: "conversation", id: null, turns: [], private: true });
  assert.deepEqual(state.tags(), ["private"]);
});

Deno.test("the summary comes with hello when the conversation has one, and follows summary events", () => {
  const summary = { text: "Earlier: the user planned a trip.", turns: 3 };
  assert.deepEqual(new ChatState({ ...HELLO, summary }).summary, summary);
  // A hello without one, of a conversation with turns: not known yet.
  const state = new ChatState(HELLO);
  assert.equal(state.summary, undefined);
  state.apply({ type: "summary", id: 2, text: "Now.", turns: 4 });
  assert.deepEqual(state.summary, { text: "Now.", turns: 4 });
  state.apply({ type: "summary", id: 9, text: "Elsewhere.", turns: 1 });
  assert.deepEqual(state.summary, { text: "Now.", turns: 4 });
});
