/**
 * The tier's files scenario, through the daemon (13.2): a picture for a
 * model served without `--mmproj` is refused with `no_vision` from what
 * `/props` says, before any request, and a text file goes with its
 * question: the context holds its words (it grows by them).
 */
import assert from "node:assert/strict";
import { reply } from "../support/fake_llm.ts";
import { words } from "./replies.ts";
import { observe, type Scenario, turn } from "./scenario.ts";

/** A 1×1 PNG. */
const PIXEL =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** Tokens in the context after the turn, as the server reported them. */
function used(events: readonly Record<string, unknown>[]): number {
  const ctx = events.find((e) => e.type === "ctx") as
    | { used?: number }
    | undefined;
  return ctx?.used ?? 0;
}

const files: Scenario = {
  name:
    "files: a picture for a model without --mmproj is no_vision before any request; a text file's words reach the server",
  real: { role: "shift" },
  fake: {
    scripts: [reply({ content: words(40) }), reply({ content: words(40) })],
  },
  daemon: {
    config: "thinking = false\ncompact = false\n[request]\nmax_tokens = 8\n",
  },
  async run({ client }) {
    const refused = await client!.send({
      type: "ask",
      text: "What is in this picture?",
      files: [{ name: "dot.png", mime: "image/png", data: PIXEL }],
    }).then(() => client!.until((event) => event.type === "error"));
    const plain = await turn(client!, { type: "ask", text: "Notes:" });
    // A new conversation, so both questions start from the same history.
    await client!.send({ type: "new" });
    const fresh = await client!.until((event) => event.type === "conversation");
    const text = words(200).join("");
    const withFile = await turn(client!, {
      type: "ask",
      text: "Notes:",
      files: [{
        name: "notes.txt",
        mime: "text/plain",
        data: btoa(text),
      }],
    });
    return observe([...refused, ...plain, ...fresh, ...withFile], {
      grew: used(withFile) - used(plain) >= 150,
    });
  },
  check(seen) {
    assert.deepEqual(seen.events, [
      "error no_vision",
      "user",
      "state thinking",
      "token…",
      "done truncated_by max_tokens",
      "ctx",
      "state idle",
      "conversation",
      "user",
      "state thinking",
      "token…",
      "done truncated_by max_tokens",
      "ctx",
      "state idle",
    ]);
    assert.equal(seen.extra.grew, true, "the file's 200 words were read");
  },
};

/** The files scenarios. */
export const FILES_SCENARIOS: Scenario[] = [files];
