/**
 * The page's files without a browser: what each question carried as the
 * daemon lists it (`user`, `conversation.turns[]`, `hello.pending`), the
 * pictures a page sent shown from what it sent, a saved turn's pictures
 * fetched once by their place among the kept turns (never in a private
 * conversation), a picture that cannot be had, a turn replaced, a
 * reconnect, and a reply cut short inside its reasoning.
 */
import assert from "node:assert/strict";
import { CanvasModel } from "../../web/model.js";
import { PictureCache, pictureKey, places } from "../../web/files_model.js";
import type {
  BackendView,
  Event,
  FileView,
  TurnView,
} from "../../src/protocol/protocol.ts";
import { type Hello, idleHello } from "../support/hello_fixture.ts";

const BACKEND_UP: BackendView = {
  state: "up",
  url: "http://127.0.0.1:8080",
  model: "tiny",
  ctx_max: 4096,
  message: null,
};

function hello(extra: Partial<Hello> = {}): Hello {
  return idleHello({
    backend: BACKEND_UP,
    ...extra,
  });
}

function feed(model: CanvasModel, ...events: Event[]): Set<string> {
  const changed = new Set<string>();
  for (const event of events) {
    for (const part of model.apply(event)) changed.add(part);
  }
  return changed;
}

const PICTURE: FileView = {
  name: "chart.png",
  mime: "image/png",
  bytes: 4_210,
  kind: "image",
};
const LOG: FileView = {
  name: "server.log",
  mime: "text/plain",
  bytes: 912,
  kind: "text",
};
const PDF: FileView = {
  name: "report.pdf",
  mime: "application/pdf",
  bytes: 20_480,
  kind: "converted",
};
/** What the page sent for PICTURE and LOG: the picture's data URL, none for the log. */
const SOURCES = ["data:image/png;base64,iVBORw0KGgo=", null];
const SENT_FILES = [
  { name: "chart.png", mime: "image/png", data: "iVBORw0KGgo=" },
  { name: "server.log", mime: "text/plain", data: "bG9n" },
];

const turn = (user: string, files?: FileView[]): TurnView => ({
  user,
  reply: `About ${user}.`,
  tools: [],
  ...(files ? { files } : {}),
});

const notices = (model: CanvasModel) =>
  model.takeNotices().map((n: { text: string }) => n.text);

Deno.test("a question's files are shown as the daemon lists them: in user, in the turns, in hello.pending", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 3, turns: [turn("plain"), turn("with", [PDF])] }));
  assert.equal(model.current.turns[0]?.files, undefined);
  assert.deepEqual(model.current.turns[1]?.files, [PDF]);

  feed(model, { type: "user", text: "", files: [PICTURE, LOG], ref: "x-1" });
  assert.deepEqual(model.shownPending?.files, [PICTURE, LOG]);
  // Another client's question: chips only, nothing of its bytes.
  assert.equal(model.shownPending?.sources, undefined);
  feed(model, { type: "token", delta: "A chart." });
  feed(model, { type: "done", id: 3, stopped: false });
  assert.deepEqual(model.current.turns[2]?.files, [PICTURE, LOG]);
  assert.equal(model.current.turns[2]?.user, "");

  const late = new CanvasModel();
  feed(
    late,
    hello({
      id: 3,
      state: "thinking",
      pending: {
        id: 3,
        user: "Look",
        reply: "",
        think: "",
        tools: [],
        files: [PICTURE],
      },
    }),
  );
  assert.deepEqual(late.shownPending?.files, [PICTURE]);
});

Deno.test("the page's own question shows its pictures from what it sent; one it did not send does not", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 3, turns: [] }));
  model.files.sent("web-a-1", { files: SENT_FILES, sources: SOURCES });
  feed(model, {
    type: "user",
    text: "Why the spike?",
    files: [PICTURE, LOG],
    ref: "web-a-2",
  });
  assert.equal(model.shownPending?.sources, undefined, "another ref's");
  feed(model, { type: "done", id: 3, stopped: true });
  feed(model, {
    type: "user",
    text: "Why the spike?",
    files: [PICTURE, LOG],
    ref: "web-a-1",
  });
  assert.deepEqual(model.shownPending?.sources, SOURCES);
  feed(model, { type: "done", id: 3, stopped: false });
  const saved = model.current.turns.at(-1);
  assert.deepEqual(saved?.sources, SOURCES);
  // Kept by the daemon: nothing to send again.
  assert.equal(saved?.resend, undefined);
  // Known without asking, at its place among the kept turns (the stopped
  // one before it was not kept).
  const key = pictureKey(3, 0, 0, PICTURE);
  assert.equal(model.files.pictures.src(key), SOURCES[0]);
  assert.equal(model.files.pictures.want(3, 0, 0, PICTURE), null);
});

Deno.test("a question the daemon did not keep holds the files this page sent, for Ask again", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 4, turns: [] }));
  model.files.sent("web-b-1", { files: SENT_FILES, sources: SOURCES });
  feed(
    model,
    { type: "user", text: "Why?", files: [PICTURE, LOG], ref: "web-b-1" },
    {
      type: "error",
      code: "llama_unreachable",
      message: "llama-server unreachable at http://127.0.0.1:8080",
      turn: true,
      ref: "web-b-1",
    },
  );
  const failed = model.current.turns.at(-1);
  assert.equal(failed?.status, "error");
  assert.deepEqual(failed?.resend, SENT_FILES);
  assert.deepEqual(failed?.files, [PICTURE, LOG]);
});

Deno.test("a saved turn's pictures are asked for once, by the place among the kept turns; never in a private conversation", () => {
  const turns = [
    { status: null },
    { status: "stopped" },
    { status: "truncated" },
    { status: "error" },
  ];
  assert.deepEqual(places(turns, 8), [
    { conversation: 8, turn: 0 },
    null,
    { conversation: 8, turn: 1 },
    null,
  ]);
  assert.deepEqual(places(turns, null), [null, null, null, null]);

  const model = new CanvasModel();
  feed(model, hello({ id: 8, turns: [turn("a"), turn("b", [LOG, PICTURE])] }));
  const pictures = model.files.pictures;
  const command = pictures.want(8, 1, 1, PICTURE);
  assert.deepEqual(command, {
    type: "file",
    conversation: 8,
    turn: 1,
    index: 1,
  });
  // Asked once; a text file is no picture to fetch.
  assert.equal(pictures.want(8, 1, 1, PICTURE), null);
  assert.equal(pictures.want(8, 1, 0, LOG), null);
  pictures.asked("web-c-1", command!);
  const changed = feed(model, {
    type: "file",
    conversation: 8,
    turn: 1,
    index: 1,
    name: "chart.png",
    mime: "image/png",
    data: "iVBORw0KGgo=",
    ref: "web-c-1",
  });
  assert.ok(changed.has("files"));
  assert.equal(
    pictures.src(pictureKey(8, 1, 1, PICTURE)),
    "data:image/png;base64,iVBORw0KGgo=",
  );
  // A file answer the page never asked for draws nothing.
  assert.ok(
    !feed(model, {
      type: "file",
      conversation: 8,
      turn: 0,
      index: 0,
      name: "x.png",
      mime: "image/png",
      data: "AAAA",
    }).has("files"),
  );
});

Deno.test("a picture that cannot be had keeps its chip: no_such_file is no notice, and it is not asked again", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 8, turns: [turn("b", [PICTURE])] }));
  const pictures = model.files.pictures;
  pictures.asked("web-d-1", pictures.want(8, 0, 0, PICTURE)!);
  const changed = feed(model, {
    type: "error",
    code: "no_such_file",
    message: "no such file",
    ref: "web-d-1",
  });
  assert.ok(changed.has("files"));
  assert.deepEqual(notices(model), []);
  assert.equal(pictures.missing(pictureKey(8, 0, 0, PICTURE)), true);
  assert.equal(pictures.want(8, 0, 0, PICTURE), null);
  // Any other command's error is still told.
  feed(model, {
    type: "error",
    code: "no_such_conversation",
    message: "no such conversation",
    ref: "web-d-2",
  });
  assert.deepEqual(notices(model), ["no such conversation"]);
});

Deno.test("a turn replaced by a retry or an edit has its pictures fetched afresh", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 2, turns: [turn("first", [PICTURE])] }));
  const pictures = model.files.pictures;
  pictures.asked("web-e-1", pictures.want(2, 0, 0, PICTURE)!);
  feed(model, {
    type: "file",
    conversation: 2,
    turn: 0,
    index: 0,
    name: "chart.png",
    mime: "image/png",
    data: "T0xE",
    ref: "web-e-1",
  });
  const key = pictureKey(2, 0, 0, PICTURE);
  assert.equal(pictures.src(key), "data:image/png;base64,T0xE");
  feed(
    model,
    { type: "user", text: "first", files: [PICTURE], replaces: true },
    { type: "token", delta: "Again." },
    { type: "done", id: 2, stopped: false, replaces: true },
  );
  assert.equal(model.current.turns.length, 1);
  assert.equal(pictures.src(key), null);
  assert.ok(pictures.want(2, 0, 0, PICTURE), "asked for again");
});

Deno.test("a new connection asks again for a picture asked on the old one", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 2, turns: [turn("first", [PICTURE])] }));
  const pictures = model.files.pictures;
  pictures.asked("web-f-1", pictures.want(2, 0, 0, PICTURE)!);
  assert.equal(pictures.want(2, 0, 0, PICTURE), null);
  feed(model, hello({ id: 2, turns: [turn("first", [PICTURE])] }));
  assert.ok(pictures.want(2, 0, 0, PICTURE));
});

Deno.test("a private conversation's turn keeps its files as chips and gives no place to fetch them", () => {
  const model = new CanvasModel();
  feed(model, { type: "conversation", id: null, turns: [], private: true });
  feed(
    model,
    { type: "user", text: "Private picture", files: [PICTURE] },
    { type: "done", id: null, stopped: false },
  );
  assert.deepEqual(model.current.turns[0]?.files, [PICTURE]);
  assert.deepEqual(places(model.current.turns, model.current.id), [null]);
});

Deno.test("a reply cut short inside its reasoning shows the daemon's note as its answer", () => {
  const note =
    "[the reply ended inside its reasoning: raise max_tokens or set thinking = false]";
  const model = new CanvasModel();
  feed(
    model,
    hello({ id: 6 }),
    { type: "user", text: "Think hard" },
    { type: "think", delta: "Step one, step two" },
  );
  assert.equal(model.shownPending?.reply, "");
  feed(
    model,
    { type: "token", delta: note },
    {
      type: "done",
      id: 6,
      stopped: false,
      truncated: true,
      truncated_by: "max_tokens",
    },
  );
  const last = model.current.turns.at(-1);
  assert.equal(last?.reply, note);
  assert.equal(last?.think, "Step one, step two");
  assert.equal(last?.status, "truncated");
});

Deno.test("a search hit from an attached file names the file", () => {
  const model = new CanvasModel();
  feed(model, hello());
  model.searchSent("web-g-1", "spike");
  feed(model, {
    type: "results",
    items: [
      {
        id: 2,
        title: "Load",
        snippet: "a **spike** at noon",
        text: "a spike at noon",
        marks: [[2, 7]],
        file: "server.log",
      },
      { id: 3, title: "Other", snippet: "no **spike**" },
    ],
    ref: "web-g-1",
  });
  assert.equal(model.results?.[0]?.file, "server.log");
  assert.equal(model.results?.[1]?.file, undefined);
});

Deno.test("the pictures kept are bounded: past the limit the oldest goes, to be fetched again if shown again", () => {
  const pictures = new PictureCache(130);
  const file = (name: string): FileView => ({ ...PICTURE, name });
  const answer = (turn: number, ref: string, data: string) => {
    pictures.asked(ref, pictures.want(1, turn, 0, file(`p${turn}.png`))!);
    pictures.received({
      type: "file",
      conversation: 1,
      turn,
      index: 0,
      name: `p${turn}.png`,
      mime: "image/png",
      data,
      ref,
    });
  };
  // Each data URL is 62 characters (22 of prefix, 40 of data): two fit.
  answer(0, "r0", "A".repeat(40));
  answer(1, "r1", "B".repeat(40));
  assert.ok(pictures.src(pictureKey(1, 0, 0, file("p0.png"))));
  answer(2, "r2", "C".repeat(40));
  assert.equal(pictures.src(pictureKey(1, 0, 0, file("p0.png"))), null);
  assert.ok(pictures.src(pictureKey(1, 1, 0, file("p1.png"))));
  assert.ok(pictures.src(pictureKey(1, 2, 0, file("p2.png"))));
  assert.ok(pictures.want(1, 0, 0, file("p0.png")), "asked for again");
});
