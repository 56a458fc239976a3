/**
 * The composer's files without a browser (web/attachments.js): at most 8,
 * none empty; held until the daemon takes the question that carries them,
 * kept through a refusal; the line limit named in sizes before anything
 * is sent; and the rules a picture is sent by (a longest side of 1,536 px,
 * JPEG unless it may go as it is).
 */
import assert from "node:assert/strict";
import {
  Attachments,
  base64Length,
  fitWithin,
  jpegName,
  lineBytes,
  MAX_LINE_BYTES,
  mimeOf,
  overLimit,
  type Prepared,
  sendAsIs,
  sizeText,
  toBase64,
} from "../../web/attachments.js";

interface FakeFile {
  name: string;
  size: number;
  type: string;
}

/** A file as a test hands it in. */
function file(name: string, size: number, type = "text/plain"): FakeFile {
  return { name, size, type };
}

/** Reading that answers when the test says, each file as its size in `x`s. */
function reader() {
  const waiting = new Map<string, PromiseWithResolvers<Prepared>>();
  const read = (f: FakeFile): Promise<Prepared> => {
    const ready = Promise.withResolvers<Prepared>();
    waiting.set(f.name, ready);
    return ready.promise;
  };
  const finish = (name: string, error?: Error) => {
    const ready = waiting.get(name)!;
    if (error) {
      ready.reject(error);
      return;
    }
    ready.resolve({
      name,
      mime: "text/plain",
      bytes: 3,
      data: "eHh4",
      src: null,
    });
  };
  return { read, finish };
}

Deno.test("at most 8 files, none empty, each read as soon as it is added", async () => {
  const { read, finish } = reader();
  let draws = 0;
  const list = new Attachments<FakeFile>(read, () => draws++);
  const nine = Array.from({ length: 9 }, (_, i) => file(`f${i}.txt`, 3));
  const left = list.add([file("empty.txt", 0), ...nine]);
  assert.deepEqual(left, [
    "empty.txt is empty: there is nothing to send.",
    "f8.txt: a question carries at most 8 files.",
  ]);
  assert.equal(list.entries.length, 8);
  assert.equal(list.problem(), "The files are still being read.");
  for (let i = 0; i < 8; i++) finish(`f${i}.txt`);
  await list.settled();
  assert.equal(list.problem(), null);
  assert.equal(list.attachments().length, 8);
  assert.deepEqual(list.attachments()[0], {
    name: "f0.txt",
    mime: "text/plain",
    data: "eHh4",
  });
  assert.ok(draws >= 9, "each change is drawn");
});

Deno.test("a file that cannot be read stops the question until it is removed", async () => {
  const { read, finish } = reader();
  const list = new Attachments<FakeFile>(read, () => {});
  list.add([file("a.txt", 3), file("locked.txt", 3)]);
  finish("a.txt");
  finish("locked.txt", new Error("permission denied"));
  await list.settled();
  assert.equal(
    list.problem(),
    "locked.txt could not be read (permission denied): remove it.",
  );
  list.remove(list.entries[1]!.id);
  assert.equal(list.problem(), null);
  assert.deepEqual(list.attachments().map((f) => f.name), ["a.txt"]);
});

Deno.test("files stay until the daemon takes their question; a refusal gives the question back with them", async () => {
  const { read, finish } = reader();
  const list = new Attachments<FakeFile>(read, () => {});
  list.add([file("a.txt", 3)]);
  finish("a.txt");
  await list.settled();
  list.sent("web-1", { text: "Summarise", edit: false });
  assert.equal(list.sending, true);
  // On their way: not removable.
  list.remove(list.entries[0]!.id);
  assert.equal(list.entries.length, 1);
  // Another client's events and other refs change nothing.
  assert.equal(list.answered({ type: "user", ref: "web-9" }), null);
  assert.equal(list.answered({ type: "user" }), null);
  assert.equal(list.sending, true);

  assert.deepEqual(list.answered({ type: "error", ref: "web-1" }), {
    text: "Summarise",
    edit: false,
  });
  assert.equal(list.sending, false);
  assert.equal(list.entries.length, 1, "kept after the refusal");

  list.sent("web-2", { text: "Summarise", edit: true });
  assert.deepEqual(list.lost(), { text: "Summarise", edit: true });
  assert.equal(list.entries.length, 1, "kept when the link dropped");

  list.sent("web-3", { text: "Summarise", edit: false });
  assert.equal(list.answered({ type: "user", ref: "web-3" }), null);
  assert.equal(list.entries.length, 0, "cleared once the question is taken");
  assert.equal(list.sending, false);
});

Deno.test("the line limit: the page counts the line as sent and names the files' total and what fits", () => {
  const small = { type: "ask", text: "hi", files: [] };
  assert.equal(overLimit(small), null);
  // The line as the daemon reads it: JSON, base64 data, and the ref.
  const command = {
    type: "ask",
    text: "Why?",
    files: [{
      name: "a.log",
      mime: "text/plain",
      data: toBase64(new Uint8Array(10)),
    }],
    ref: "web-0123abcd-12",
  };
  const sized = {
    type: "ask",
    text: "Why?",
    files: [{ name: "a.log", mime: "text/plain", bytes: 10 }],
  };
  const exact = new TextEncoder().encode(JSON.stringify(command)).length;
  const counted = lineBytes(sized);
  assert.ok(
    counted >= exact && counted < exact + 64,
    `${counted} counts the ${exact}-byte line and room for a longer ref`,
  );

  const fits = Math.floor((MAX_LINE_BYTES - 1000) * 3 / 4);
  assert.equal(
    overLimit({
      type: "ask",
      text: "",
      files: [{ name: "big.log", mime: "text/plain", bytes: fits }],
    }),
    null,
  );
  const why = overLimit({
    type: "ask",
    text: "",
    files: [
      { name: "a.log", mime: "text/plain", bytes: 600 * 1024 },
      { name: "b.png", mime: "image/png", bytes: 300 * 1024 },
    ],
  });
  assert.match(why ?? "", /^The files come to 900 KB, more than the 76\d KB /);
  assert.match(why ?? "", /1 MiB/);

  const long = overLimit({ type: "ask", text: "x".repeat(MAX_LINE_BYTES) });
  assert.match(long ?? "", /^This question is 1\.0 MB: .* at most 1 MiB/);
});

Deno.test("a picture is drawn at most 1,536 px on its longest side, and goes as it is only when small in both ways", () => {
  assert.deepEqual(fitWithin(4032, 3024), { width: 1536, height: 1152 });
  assert.deepEqual(fitWithin(1000, 3000), { width: 512, height: 1536 });
  assert.deepEqual(fitWithin(800, 600), { width: 800, height: 600 });
  assert.deepEqual(fitWithin(100_000, 10), { width: 1536, height: 1 });

  assert.equal(sendAsIs("image/png", 1536, 900, 200_000), true);
  assert.equal(sendAsIs("image/webp", 640, 480, 10_000), true);
  assert.equal(sendAsIs("image/png", 1537, 900, 200_000), false);
  assert.equal(sendAsIs("image/jpeg", 1200, 900, 600_000), false);
  // A type the daemon takes as no picture is redrawn as JPEG.
  assert.equal(sendAsIs("image/bmp", 64, 64, 12_000), false);

  assert.equal(jpegName("photo.PNG"), "photo.jpg");
  assert.equal(jpegName("scan.final.webp"), "scan.final.jpg");
  assert.equal(jpegName(".hidden"), ".hidden.jpg");
});

Deno.test("a redrawn picture's name stays within the 255 characters the daemon takes, never cut inside a character", () => {
  const long = jpegName(`${"x".repeat(255)}`);
  assert.equal(long.length, 255);
  assert.equal(long, `${"x".repeat(251)}.jpg`);
  // A short extension made .jpg would pass the limit by one.
  assert.equal(jpegName(`${"y".repeat(252)}.pn`), `${"y".repeat(251)}.jpg`);
  // An emoji (two UTF-16 units) where the cut falls goes whole.
  const emoji = jpegName(`${"z".repeat(250)}😀😀.webp`);
  assert.equal(emoji, `${"z".repeat(250)}.jpg`);
  assert.equal(
    jpegName(`${"w".repeat(249)}😀.png`),
    `${"w".repeat(249)}😀.jpg`,
  );
});

Deno.test("sizes, types and base64 as the page sends and shows them", () => {
  assert.equal(sizeText(1), "1 byte");
  assert.equal(sizeText(812), "812 bytes");
  assert.equal(sizeText(9_728), "9.5 KB");
  assert.equal(sizeText(217_088), "212 KB");
  assert.equal(sizeText(1_258_291), "1.2 MB");
  assert.equal(mimeOf(""), "application/octet-stream");
  assert.equal(mimeOf(" Text/Plain "), "text/plain");
  const bytes = new Uint8Array([0, 1, 2, 250, 251, 252, 253]);
  assert.equal(toBase64(bytes), btoa(String.fromCharCode(...bytes)));
  assert.equal(base64Length(7), toBase64(bytes).length);
  assert.equal(base64Length(0), 0);
});
