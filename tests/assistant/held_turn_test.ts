/** A held turn's pictures: held in one form (bytes until their data URL is made, then the URL), and sent as text to a model that reads none. */
import assert from "node:assert/strict";
import {
  type HeldTurn,
  pictureOf,
  sendable,
} from "../../src/assistant/held_turn.ts";
import { questionContent } from "../../src/assistant/attachments.ts";

const PNG = await Deno.readFile(
  new URL("../fixtures/files/red.png", import.meta.url),
);

/** A turn asked with a note and a picture; `row` null: not saved (a private conversation's). */
function turnWithPicture(row: number | null): HeldTurn {
  const files = [
    {
      name: "notes.txt",
      mime: "text/plain",
      bytes: 4,
      kind: "text" as const,
      text: "pier",
      data: null,
    },
    {
      name: "red.png",
      mime: "image/png",
      bytes: PNG.length,
      kind: "image" as const,
      text: null,
      data: PNG,
    },
  ];
  return {
    view: { user: "Look", reply: "Red.", tools: [] },
    messages: [
      { role: "user", content: questionContent("Look", files) },
      { role: "assistant", content: "Red." },
    ],
    files,
    tokens: null,
    row,
  };
}

const NO_STORE = {
  fileData: (): Uint8Array | null => {
    throw new Error("the history is not read for a picture held in memory");
  },
};

Deno.test("once a picture's data URL is made its bytes are let go; they come back from the URL", () => {
  const turn = turnWithPicture(null);
  const sent = sendable(turn, NO_STORE);
  const url = `data:image/png;base64,${PNG.toBase64()}`;
  assert.deepEqual((sent[0]!.content as unknown[]).at(-1), {
    type: "image_url",
    image_url: { url },
  });
  assert.equal(turn.files[1]!.data, null, "the bytes are no longer held");
  assert.deepEqual(pictureOf(turn, 1, NO_STORE), PNG);
  assert.equal(sendable(turn, NO_STORE), sent, "made once");
});

Deno.test("a saved turn's picture comes back from the history once its bytes are let go", () => {
  const turn = turnWithPicture(7);
  sendable(turn, NO_STORE);
  assert.equal(turn.files[1]!.data, null);
  const asked: [number, number][] = [];
  const store = {
    fileData: (row: number, index: number) => {
      asked.push([row, index]);
      return PNG;
    },
  };
  assert.deepEqual(pictureOf(turn, 1, store), PNG);
  assert.deepEqual(asked, [[7, 1]]);
});

Deno.test("to a model that reads no pictures, a picture of history goes as a line of text naming it", () => {
  const turn = turnWithPicture(null);
  const [question, reply] = sendable(turn, NO_STORE, true);
  assert.equal(typeof question!.content, "string");
  assert.match(
    question!.content as string,
    /^Look\n\nFile notes\.txt:\n```\npier\n```\n\n\[picture red\.png: the model in use does not read pictures\]$/,
  );
  assert.deepEqual(reply, { role: "assistant", content: "Red." });
  assert.equal(turn.files[1]!.data, PNG, "nothing made, nothing let go");
});
