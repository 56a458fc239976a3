/**
 * chat in a terminal against a scripted daemon for search by meaning: the
 * commands as they go over the socket, the indexing sign in the prompt,
 * and the hits found by meaning alone as the screen shows them.
 */
import assert from "node:assert/strict";
import {
  clientArgs,
  clientEnv,
  ClientProcess,
  hasScript,
  PTY_SKIP,
} from "../support/client_harness.ts";
import { Screen } from "../support/screen.ts";
import { ScriptedDaemon } from "./scripted_daemon.ts";

const FRANCE = {
  id: 1,
  title: "What is the capital of France?",
  snippet: "What is the **capital** of France?",
  text: "What is the capital of France?",
  marks: [[12, 19]],
};

Deno.test({
  name:
    `chat in a terminal 40 columns wide: indexing shows in the prompt, its end in a line, and /search marks hits by meaning${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using daemon = await ScriptedDaemon.start({
      indexing: { done: 1, total: 4 },
    });
    const size = { columns: 40, rows: 30 };
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.path, ["chat"]),
      { env: clientEnv(daemon.dir), pty: true, size },
    );
    let at = await chat.waitFor("indexing 25%> ");
    await daemon.send({ type: "indexing", done: 3, total: 4 });
    at = await chat.waitFor("indexing 75%> ", at);
    await daemon.send({ type: "indexing", done: 4, total: 4 });
    at = await chat.waitFor("indexed 4 turns for search by meaning", at);
    at = await chat.waitFor(/\r> \r/, at);
    await chat.type("/search capital\r");
    const both = await daemon.next();
    assert.deepEqual(both, {
      type: "search",
      q: "capital",
      limit: 20,
      ref: both.ref,
    });
    await daemon.send({
      type: "results",
      items: [
        { ...FRANCE, by: "both" },
        {
          id: 2,
          title: "Trip",
          snippet: "Where does the government of Peru sit?",
          text: "Where does the government of Peru sit?",
          marks: [],
          by: "meaning",
        },
      ],
      ref: both.ref,
    });
    at = await chat.waitFor("(by meaning)", at);
    at = await chat.waitFor(/\r> \r/, at);
    await chat.type("/search --words capital\r");
    const words = await daemon.next();
    assert.equal(words.by, "words");
    await daemon.send({
      type: "results",
      items: [{ ...FRANCE, by: "words" }],
      ref: words.ref,
    });
    at = await chat.waitFor("#1", at);
    await chat.waitFor(/\r> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
    using screen = new Screen({ ...size, rows: 100 });
    await screen.write(chat.stdout);
    const lines = screen.text();
    for (const line of lines) {
      assert.ok(line.length <= 40, `wider than 40 columns: ${line}`);
    }
    const trip = lines.findIndex((line) => line.includes("#2  Trip"));
    assert.equal(lines[trip], "    #2  Trip (by meaning)");
    assert.equal(lines[trip + 1], "        Where does the government of");
    // Only the first search found anything by meaning.
    assert.equal(
      lines.filter((line) => line.includes("by meaning)")).length,
      1,
    );
    assert.ok(lines.includes("indexed 4 turns for search by meaning"));
  },
});
