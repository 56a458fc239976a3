/**
 * Protocol fuzzing against the real daemon: seeded hostile lines (invalid
 * JSON and UTF-8, control characters, deep nesting, huge strings, wrong
 * types for every field, unknown types, odd ids), written at random byte
 * boundaries on one connection. Each line's answer is computed here from the
 * protocol rules and compared in order; the connection stays open, the
 * daemon stays up, the history is unchanged and memory stays bounded.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { log } from "../../src/base/log.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { HEAVY, rssKiB, seeded } from "../fixtures/chaos.ts";
import { type Received, SocketClient } from "../support/socket_client.ts";

const MAX_LINE = 1024 * 1024;
const DEFAULT_LIMIT = 50;
/** The answer to a line that is no command, naming what a line must be. */
const BAD_COMMAND = 'bad command: a JSON object with a string "type" per line';
const LINES = HEAVY ? 100_000 : 10_000;
/** Text that fuzz lines carry and the log must never show. */
const MARKER = "fuzzprivate4c1d";
/**
 * Growth of the daemon's resident memory over the run that fails the test.
 * Measured: 135-200 MiB after 10,000 lines (70-140 MiB of it in the first
 * half, as the first megabyte-sized lines and searches size the heaps) and
 * 160 MiB after 100,000 lines (840 MB): it levels off. Keeping every line
 * would pass the bound in the heavy run.
 */
const RSS_GROWTH_LIMIT_KIB = 384 * 1024;
/** Growth over the second half (measured 25-100 MiB, the most beside other suites). */
const RSS_SECOND_HALF_LIMIT_KIB = 192 * 1024;

const rng = seeded(20260801);

/** What one line must get back, with the line's ref when it is echoed. `reject` marks lines this suite never sends (a real ask, a real delete, a rename). */
export type Answer =
  & (
    | { kind: "none" }
    | { kind: "reject" }
    | { kind: "error"; message: string; malformed: boolean }
    | { kind: "pong" }
    | { kind: "conversations"; limit: number | null }
    | { kind: "conversation"; id: number | null; private?: true }
    | { kind: "results"; q: string; limit: number }
    | { kind: "export"; id: number; format: string }
  )
  & { ref?: string | number };

const NONE: Answer = { kind: "none" };
const REJECT: Answer = { kind: "reject" };
const bad = (message: string): Answer => ({
  kind: "error",
  message,
  malformed: true,
});

const encoder = new TextEncoder();
const utf8 = new TextDecoder("utf-8", { fatal: true });

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const isId = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value);

const isLimit = (value: unknown): value is number => isId(value) && value > 0;

const isRef = (value: unknown): value is string | number =>
  isId(value) ||
  (typeof value === "string" && Array.from(value).length <= 128);

const isTitle = (value: unknown): boolean =>
  typeof value === "string" && value.trim() !== "" &&
  Array.from(value.trim().split(/\s+/).join(" ")).length <= 200;

/** The protocol's answer to one line (without its newline), from the rules in SPEC §4; `reject` for lines the suite never sends. */
export function answerTo(
  bytes: Uint8Array,
  existing: ReadonlySet<number>,
): Answer {
  // A CRLF line end is a line end: its CR is not part of the line.
  const line = bytes.at(-1) === 0x0d ? bytes.subarray(0, -1) : bytes;
  if (line.length > MAX_LINE) return bad("line too long");
  let text: string;
  try {
    text = utf8.decode(line);
  } catch {
    return bad(BAD_COMMAND);
  }
  if (text.trim() === "") return NONE;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad(BAD_COMMAND);
  }
  if (!isRecord(value)) return bad(BAD_COMMAND);
  if (value.ref !== undefined && !isRef(value.ref)) return bad("bad ref");
  const answer = answerToCommand(value, existing);
  if (value.ref === undefined || answer.kind === "none") return answer;
  // JSON has no -0: it comes back as 0.
  return { ...answer, ref: Object.is(value.ref, -0) ? 0 : value.ref };
}

function answerToCommand(
  value: Record<string, unknown>,
  existing: ReadonlySet<number>,
): Answer {
  if (typeof value.type !== "string") return bad(BAD_COMMAND);
  const has = (key: string) => Object.hasOwn(value, key);
  const missing: Answer = {
    kind: "error",
    message: "no such conversation",
    malformed: false,
  };
  switch (value.type) {
    case "ask":
      if (typeof value.text !== "string") return bad("bad text");
      return value.text.trim() === "" ? NONE : REJECT;
    case "stop":
      return NONE;
    case "new":
      if (value.private === true) {
        return { kind: "conversation", id: null, private: true };
      }
      if (value.private === undefined || value.private === false) {
        return { kind: "conversation", id: null };
      }
      return bad("bad private");
    case "retry":
      return REJECT;
    case "edit":
      if (typeof value.text !== "string") return bad("bad text");
      return value.text.trim() === "" ? NONE : REJECT;
    case "rename":
      if (!isId(value.id)) return bad("bad id");
      if (!isTitle(value.title)) return bad("bad title");
      return existing.has(value.id) ? REJECT : missing;
    case "export": {
      if (!isId(value.id)) return bad("bad id");
      const format = value.format === undefined ? "markdown" : value.format;
      if (format !== "markdown" && format !== "json") return bad("bad format");
      return existing.has(value.id)
        ? { kind: "export", id: value.id, format }
        : missing;
    }
    case "ping":
      return { kind: "pong" };
    case "list":
      if (!has("limit")) return { kind: "conversations", limit: null };
      return isLimit(value.limit)
        ? { kind: "conversations", limit: value.limit }
        : bad("bad limit");
    case "open":
    case "delete":
      if (!isId(value.id)) return bad("bad id");
      if (!existing.has(value.id)) return missing;
      return value.type === "open"
        ? { kind: "conversation", id: value.id }
        : REJECT;
    case "search":
      if (typeof value.q !== "string") return bad("bad query");
      if (!has("limit")) {
        return { kind: "results", q: value.q, limit: DEFAULT_LIMIT };
      }
      return isLimit(value.limit)
        ? { kind: "results", q: value.q, limit: value.limit }
        : bad("bad limit");
    default:
      // The echoed type is cut to 64 code points so a huge one cannot echo back.
      return bad(
        `unknown command ${Array.from(value.type).slice(0, 64).join("")}`,
      );
  }
}

// ---- the generator ------------------------------------------------------

const KNOWN_QUERIES = ["lighthouse", "harbour", "citta", "pack", "the"];
const ID_VALUES = [
  "1",
  "2",
  "3",
  "2.0",
  "3e0",
  "1.0e0",
  "0",
  "-0",
  "-1",
  "-3",
  "4",
  "99",
  "4294967297",
  "9007199254740991",
  "-9007199254740991",
];
const WRONG_VALUES = [
  "null",
  "true",
  "false",
  "1.5",
  "-2.5",
  "0.1",
  "1e400",
  "-1e400",
  "1e-400",
  "9007199254740992",
  "123456789012345678901234567890",
  '"1"',
  '""',
  '"ping"',
  "[]",
  "{}",
  "[1,2]",
  '{"id":1}',
  '"\\u0000"',
];
const LIMIT_VALUES = [
  "1",
  "2",
  "3",
  "50",
  "10000",
  "10001",
  "1e9",
  ...WRONG_VALUES,
];
const TYPES = [
  "ask",
  "retry",
  "edit",
  "stop",
  "new",
  "list",
  "open",
  "search",
  "delete",
  "rename",
  "export",
  "ping",
];
const REF_VALUES = [
  '"r"',
  '""',
  "0",
  "-0",
  "42",
  "-7",
  "9007199254740991",
  '"\\ud800"',
  JSON.stringify("🦄".repeat(128)),
  JSON.stringify("🦄".repeat(129)),
  JSON.stringify("x".repeat(129)),
  JSON.stringify(MARKER),
  ...WRONG_VALUES,
];
const ODD_TYPES = [
  "",
  " ",
  "ASK",
  "Ping",
  "ping ",
  " ping",
  "ping\u0000",
  "hello",
  "pong",
  "error",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "пинг",
  "🦄",
  "\ud800",
  "a".repeat(65),
  "é".repeat(100),
  "🦄".repeat(40),
  `${MARKER}-type`,
];
const BLANKS = [
  "",
  " ",
  "\t",
  "   \t  ",
  "\u00a0",
  "\u2003",
  "\u3000",
  "\ufeff",
  "\u2028",
  "\n\r\t ",
];
const TITLE_VALUES = [
  ...BLANKS.map((blank) => JSON.stringify(blank)),
  JSON.stringify("é".repeat(201)),
  JSON.stringify(` ${"a ".repeat(100)} `),
  JSON.stringify("a ".repeat(101)),
  JSON.stringify(MARKER),
  ...WRONG_VALUES,
];
const BAD_UTF8 = [
  [0xff],
  [0xfe],
  [0x80],
  [0xc0, 0x80],
  [0xc1, 0xbf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xed, 0xbf, 0xbf],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xe2, 0x82],
  [0xf0, 0x9f, 0xa6],
  [0xc3],
];
const SEARCH_TEXT = [
  ...KNOWN_QUERIES,
  "",
  "   ",
  "*",
  '"',
  '""',
  "NEAR(harbour lighthouse)",
  "harbour OR pantry",
  "user:harbour",
  "^the",
  "-the",
  "(",
  "lighthouse*",
  "\u0000",
  "città",
  MARKER,
];

function ws(): string {
  return rng.chance(0.75) ? "" : rng.pick([" ", "\t", "\r", "  ", " \t\r "]);
}

/** A JSON object as text from raw member values, with random whitespace. */
function obj(members: [string, string][]): string {
  const parts = members.map(([key, value]) =>
    `${JSON.stringify(key)}${ws()}:${ws()}${value}`
  );
  return `{${ws()}${parts.join(`${ws()},${ws()}`)}${ws()}}`;
}

function str(text: string): string {
  return JSON.stringify(text);
}

function randomText(max: number): string {
  const pieces = [
    "a",
    "Z",
    " ",
    "é",
    "ß",
    "中",
    "🦄",
    "\u0301",
    "\\",
    '"',
    "\u0000",
    "\u001f",
    "\u2028",
    "\ufffd",
    "'",
    "{",
    "}",
    MARKER,
  ];
  let out = "";
  const length = rng.int(max + 1);
  while (out.length < length) out += rng.pick(pieces);
  return out;
}

function nested(depth: number, kind: "array" | "object"): string {
  return kind === "array"
    ? "[".repeat(depth) + "]".repeat(depth)
    : '{"a":'.repeat(depth) + "0" + "}".repeat(depth);
}

function extras(): [string, string][] {
  const members: [string, string][] = [];
  const count = rng.chance(0.7) ? 0 : rng.range(1, 3);
  for (let i = 0; i < count; i++) {
    members.push([
      rng.pick(["x", "extra", "__proto__", "id", "text", "q", "limit", MARKER]),
      rng.chance(0.5) ? rng.pick(WRONG_VALUES) : str(randomText(40)),
    ]);
  }
  // A ref, right or wrong, on about one command in five.
  if (rng.chance(0.2)) members.push(["ref", rng.pick(REF_VALUES)]);
  return members;
}

function command(type: string, members: [string, string][]): string {
  const all: [string, string][] = [["type", str(type)], ...members];
  // The type need not come first.
  if (rng.chance(0.3)) all.push(all.shift()!);
  return obj(all);
}

/** A ping padded with `fill` to `bytes` bytes (exactly, for a one-byte fill). */
function pingOfSize(bytes: number, fill = "x"): string {
  const head = `{"type":"ping","pad":"`;
  const tail = `"}`;
  const room = bytes - head.length - tail.length;
  return head +
    fill.repeat(Math.max(0, Math.floor(room / encoder.encode(fill).length))) +
    tail;
}

type Make = () => string | Uint8Array;

const GENERATORS: [number, Make][] = [
  // Well-formed commands, with stray members and odd spacing.
  [6, () => command("ping", extras())],
  [3, () => command("stop", extras())],
  [3, () => command("new", extras())],
  [4, () =>
    command(
      "list",
      rng.chance(0.5) ? extras() : [["limit", rng.pick(LIMIT_VALUES)]],
    )],
  [5, () => command("open", [["id", rng.pick(ID_VALUES)], ...extras()])],
  [4, () => command("delete", [["id", rng.pick(ID_VALUES)]])],
  [6, () => {
    const members: [string, string][] = [["q", str(rng.pick(SEARCH_TEXT))]];
    if (rng.chance(0.4)) members.push(["limit", rng.pick(LIMIT_VALUES)]);
    return command("search", members);
  }],
  [3, () => command("ask", [["text", str(rng.pick(BLANKS))]])],
  [2, () =>
    command("edit", [
      [
        "text",
        rng.chance(0.5) ? str(rng.pick(BLANKS)) : rng.pick(WRONG_VALUES),
      ],
      ...extras(),
    ])],
  [3, () =>
    command("rename", [
      ["id", rng.pick(ID_VALUES)],
      ["title", rng.pick(TITLE_VALUES)],
      ...extras(),
    ])],
  [
    2,
    () =>
      command("rename", [["id", rng.pick(["7", "99"])], ["title", '"Fine"']]),
  ],
  [4, () => {
    const members: [string, string][] = [["id", rng.pick(ID_VALUES)]];
    if (rng.chance(0.6)) {
      members.push([
        "format",
        rng.pick(['"markdown"', '"json"', '"html"', '"JSON"', ...WRONG_VALUES]),
      ]);
    }
    return command("export", [...members, ...extras()]);
  }],
  [2, () =>
    command("new", [[
      "private",
      rng.pick(["true", "false", ...WRONG_VALUES]),
    ], ...extras()])],
  // Wrong types for every field, and missing fields.
  [8, () => {
    const type = rng.pick(["ask", "open", "delete", "search", "list"]);
    const field = {
      ask: "text",
      open: "id",
      delete: "id",
      search: "q",
      list: "limit",
    }[type]!;
    const members: [string, string][] = rng.chance(0.15)
      ? []
      : [[field, rng.pick(WRONG_VALUES)]];
    if (type === "search" && rng.chance(0.5)) {
      members.unshift(["q", str("the")]);
      members[1] = ["limit", rng.pick(WRONG_VALUES)];
    }
    return command(type, members);
  }],
  [4, () => obj([["type", rng.pick(WRONG_VALUES)], ...extras()])],
  [2, () => obj(extras())],
  // Not an object at all.
  [3, () =>
    rng.pick([
      "[]",
      "3",
      "-0",
      "null",
      "true",
      '"ping"',
      '[{"type":"ping"}]',
      '"{\\"type\\":\\"ping\\"}"',
    ])],
  // Unknown types.
  [5, () => command(rng.pick(ODD_TYPES), extras())],
  [2, () => command(randomText(80), [])],
  // Not JSON.
  [4, () => {
    const valid = command(rng.pick(TYPES), []);
    return valid.slice(0, rng.int(valid.length));
  }],
  [4, () =>
    rng.pick([
      "{'type':'ping'}",
      '{type:"ping"}',
      '{"type":"ping",}',
      '{"type":"ping"}}',
      '{"type":"ping"} {"type":"ping"}',
      '{"type":"ping"} x',
      '{"type":"ping" /* c */}',
      '{"type":"open","id":NaN}',
      '{"type":"open","id":Infinity}',
      '{"type":"open","id":0x1}',
      '{"type":"open","id":01}',
      '{"type":"open","id":+1}',
      '{"type":"open","id":1.}',
      `not json ${MARKER}`,
      '\u00a0{"type":"ping"}',
    ])],
  [4, () => {
    const bytes = new Uint8Array(rng.range(1, 300));
    for (let i = 0; i < bytes.length; i++) {
      let byte = rng.int(256);
      if (byte === 0x0a) byte = 0x0b;
      bytes[i] = byte;
    }
    return bytes;
  }],
  // Invalid UTF-8 inside an otherwise valid command.
  [5, () => {
    const [head, tail] = [
      encoder.encode(`{"type":"ping","pad":"${MARKER} `),
      encoder.encode(` x"}`),
    ];
    const junk = rng.pick(BAD_UTF8);
    const out = new Uint8Array(head.length + junk.length + tail.length);
    out.set(head);
    out.set(junk, head.length);
    out.set(tail, head.length + junk.length);
    return out;
  }],
  // Raw control characters, inside a string or between tokens.
  [4, () => {
    let code = rng.int(32);
    if (code === 0x0a) code = 0x00;
    const control = String.fromCharCode(code);
    return rng.chance(0.5)
      ? `{"type":"ping","pad":"a${control}b"}`
      : `{"type":"ping"${control}}`;
  }],
  // Escapes, lone surrogates, duplicate keys, a __proto__ key, a BOM.
  [4, () =>
    rng.pick([
      '{"type":"p\\u0069ng"}',
      '{"\\u0074ype":"ping"}',
      '{"type":"ping","pad":"\\ud800\\udfff\\udc00"}',
      '{"type":"\\ud83e"}',
      '{"type":"open","type":"ping"}',
      '{"type":"ping","type":"open"}',
      '{"__proto__":{"type":"ping"}}',
      '{"type":"ping","__proto__":null}',
      '\ufeff{"type":"ping"}',
      '\ufeff\ufeff{"type":"ping"}',
      '{"type":"ask","text":"\\u0000"}',
      '{"type":"ask","text":"\\u00a0\\u2029"}',
    ])],
  // Blank lines.
  [3, () => rng.pick(BLANKS.filter((blank) => !blank.includes("\n")))],
  // Deep nesting, as a stray member or as the whole line.
  [2, () => {
    const depth = rng.pick([64, 1000, 10_000, 100_000]);
    const value = nested(depth, rng.chance(0.5) ? "array" : "object");
    return rng.chance(0.5) ? `{"type":"ping","deep":${value}}` : value;
  }],
  // Huge strings around the line limit.
  [0.4, () => {
    const size = rng.range(64 * 1024, MAX_LINE + 4096);
    switch (rng.int(4)) {
      case 0:
        return pingOfSize(size, rng.pick(["x", "é", "🦄"]));
      case 1:
        return command("ask", [["text", str(" ".repeat(size))]]);
      case 2:
        return command(MARKER.repeat(Math.ceil(size / MARKER.length)), []);
      default:
        return command("search", [["q", str("word ".repeat(size / 5))]]);
    }
  }],
  [0.2, () => {
    const exact = pingOfSize(MAX_LINE);
    return rng.pick([
      exact,
      exact + "\r",
      pingOfSize(MAX_LINE + 1),
      pingOfSize(MAX_LINE + 1) + "\r",
      pingOfSize(MAX_LINE - 1) + "\r\r",
    ]);
  }],
];

const TOTAL_WEIGHT = GENERATORS.reduce((sum, [weight]) => sum + weight, 0);

/** The next seeded hostile line, without its newline. */
export function generate(): Uint8Array {
  let roll = rng.next() * TOTAL_WEIGHT;
  for (const [weight, make] of GENERATORS) {
    roll -= weight;
    if (roll < 0) {
      const made = make();
      const bytes = typeof made === "string" ? encoder.encode(made) : made;
      // The frame is the newline: a line never carries one.
      return bytes.map((byte) => byte === 0x0a ? 0x20 : byte);
    }
  }
  return encoder.encode('{"type":"ping"}');
}

function chunkSize(): number {
  const roll = rng.next();
  if (roll < 0.3) return rng.range(1, 16);
  if (roll < 0.8) return rng.range(17, 4096);
  return rng.range(4097, 128 * 1024);
}

/** Writes the lines' bytes in random-sized chunks, cut anywhere, even inside a character. */
async function sendAll(client: SocketClient, lines: Iterable<Uint8Array>) {
  let carry: Uint8Array = new Uint8Array(0);
  const batch: Uint8Array[] = [];
  let size = 0;
  const flush = async (final: boolean) => {
    const all = new Uint8Array(carry.length + size);
    all.set(carry);
    let offset = carry.length;
    for (const part of batch) {
      all.set(part, offset);
      offset += part.length;
    }
    batch.length = 0;
    size = 0;
    let at = 0;
    for (let next = chunkSize(); at + next <= all.length; next = chunkSize()) {
      await client.sendRaw(all.subarray(at, at + next));
      at += next;
    }
    carry = all.slice(at);
    if (final && carry.length > 0) await client.sendRaw(carry);
  };
  for (const line of lines) {
    batch.push(line, new Uint8Array([0x0a]));
    size += line.length + 1;
    if (size > 256 * 1024) await flush(false);
  }
  await flush(true);
}

// ---- the run ---------------------------------------------------------------

interface Baseline {
  list: Received;
  opened: Map<number, Received>;
  results: Map<string, Received>;
  /** Each conversation's export text, by `id format`. */
  exports: Map<string, string>;
  rows: unknown[];
}

function storedRows(path: string): unknown[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare(
      `SELECT c.id, c.title, c.created, c.updated, t.seq, t.user, t.reply,
              t.tools, t.messages
       FROM conversations c LEFT JOIN turns t ON t.conv = c.id
       ORDER BY c.id, t.seq`,
    ).all();
  } finally {
    db.close();
  }
}

async function baseline(
  client: SocketClient,
  dbPath: string,
): Promise<Baseline> {
  await client.send({ type: "list" });
  const list = await client.next("conversations");
  const opened = new Map<number, Received>();
  const exports = new Map<string, string>();
  for (const { id } of list.items) {
    await client.send({ type: "open", id });
    opened.set(id, await client.next("conversation"));
    for (const format of ["markdown", "json"]) {
      await client.send({ type: "export", id, format });
      exports.set(`${id} ${format}`, (await client.next("export")).text);
    }
  }
  await client.send({ type: "new" });
  await client.next("conversation");
  const results = new Map<string, Received>();
  for (const q of KNOWN_QUERIES) {
    await client.send({ type: "search", q });
    results.set(q, await client.next("results"));
  }
  return { list, opened, results, exports, rows: storedRows(dbPath) };
}

/** The code beside each message this suite expects: the message before any ":" or echoed type, in snake case. */
function codeOf(message: string): string {
  return message.startsWith("unknown command ")
    ? "unknown_command"
    : message.split(":")[0]!.replaceAll(" ", "_");
}

function check(
  want: Answer,
  got: Received | undefined,
  base: Baseline,
  pid: number,
): void {
  assert.ok(got, "an answer is missing");
  const ref = want.ref === undefined ? {} : { ref: want.ref };
  assert.deepEqual(got.ref, want.ref, "the ref echoed");
  switch (want.kind) {
    case "error":
      assert.deepEqual(got, {
        type: "error",
        code: codeOf(want.message),
        message: want.message,
        ...ref,
      });
      return;
    case "pong":
      assert.equal(got.type, "pong");
      assert.equal(got.pid, pid);
      return;
    case "conversations": {
      const items = base.list.items as unknown[];
      assert.deepEqual(got, {
        type: "conversations",
        items: want.limit === null ? items : items.slice(0, want.limit),
        ...ref,
      });
      return;
    }
    case "conversation": {
      const { ref: _, ...opened } = base.opened.get(want.id ?? NaN) ?? {};
      assert.deepEqual(
        got,
        want.id === null
          ? {
            type: "conversation",
            id: null,
            turns: [],
            ...(want.private ? { private: true } : {}),
            summary: null,
            // The fuzzed daemon runs with memory = "off".
            memories: 0,
            ...ref,
          }
          : { ...opened, ...ref },
      );
      return;
    }
    case "export":
      assert.deepEqual(got, {
        type: "export",
        id: want.id,
        format: want.format,
        text: base.exports.get(`${want.id} ${want.format}`),
        ...ref,
      });
      return;
    case "results": {
      assert.equal(got.type, "results");
      const items = got.items as { id: number }[];
      const known = base.results.get(want.q);
      if (known) {
        assert.deepEqual(
          items,
          (known.items as unknown[]).slice(0, want.limit),
        );
      } else if (want.q.trim() === "") {
        assert.deepEqual(items, []);
      } else {
        assert.ok(items.length <= want.limit);
        assert.ok(items.every((item) => base.opened.has(item.id)));
      }
      return;
    }
    default:
      assert.fail(
        `no answer expected, got ${JSON.stringify(got).slice(0, 200)}`,
      );
  }
}

function describeLine(bytes: Uint8Array): string {
  const head = Array.from(
    bytes.subarray(0, 120),
    (b) =>
      b >= 0x20 && b < 0x7f
        ? String.fromCharCode(b)
        : `\\x${b.toString(16).padStart(2, "0")}`,
  ).join("");
  return `${bytes.length} bytes: ${head}${bytes.length > 120 ? "…" : ""}`;
}

Deno.test(`fuzzed lines each get the documented answer on one open connection (seed ${rng.seed}, ${LINES} lines)`, async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await SocketClient.connect(daemon.paths.socketPath, {
    timeoutMs: 180_000,
  });
  await client.next("hello");

  // A small history to protect: three conversations, five turns.
  const seeds: [string, string[]][] = [
    ["Where is the lighthouse", ["By the ", "harbour."]],
    ["And the marmalade?", ["In the ", "pantry."]],
    ["Città vecchia", ["The old ", "town."]],
    ["Pack for the trip", ["Pack ", "light."]],
    ["Then what", ["Then ", "go."]],
  ];
  for (const [index, [question, tokens]] of seeds.entries()) {
    if (index === 2 || index === 3) {
      await client.send({ type: "new" });
      await client.next("conversation");
    }
    llm.enqueue(reply({ content: tokens }));
    await client.send({ type: "ask", text: question });
    await client.until((e) => e.type === "state" && e.state === "idle");
  }
  const base = await baseline(client, daemon.paths.dbPath);
  assert.equal(base.opened.size, 3);
  const existing = new Set(base.opened.keys());
  const pid = daemon.child.pid;
  const rssBefore = await rssKiB(pid);
  const chatsBefore = llm.chats.length;

  const answers: Answer[] = [];
  const sent: Uint8Array[] = [];
  const counts = { lines: 0, bytes: 0, malformed: 0, silent: 0 };
  function* lines(count: number): Generator<Uint8Array> {
    for (let made = 0; made < count;) {
      const line = generate();
      const answer = answerTo(line, existing);
      if (answer.kind === "reject") continue;
      made++;
      counts.lines++;
      counts.bytes += line.length + 1;
      if (answer.kind === "error" && answer.malformed) counts.malformed++;
      if (answer.kind === "none") {
        counts.silent++;
      } else {
        answers.push(answer);
        // Kept only to name a failing line; a huge one by its head.
        sent.push(line.length > 4096 ? line.slice(0, 4096) : line);
      }
      yield line;
    }
  }
  /** Ends a half with a line no generator makes, answered by a message no other line gets. */
  const sentinel = async (name: string) => {
    const type = `${name}-of-fuzz-${rng.seed}`;
    await client.send({ type });
    answers.push(bad(`unknown command ${type}`));
    sent.push(encoder.encode(JSON.stringify({ type })));
    counts.malformed++;
    return await client.until((e) =>
      e.type === "error" && e.message === `unknown command ${type}`
    );
  };
  await sendAll(client, lines(LINES / 2));
  const events = await sentinel("middle");
  const rssMiddle = await rssKiB(pid);
  await sendAll(client, lines(LINES / 2));
  events.push(...await sentinel("end"));

  for (const [i, want] of answers.entries()) {
    try {
      check(want, events[i], base, pid);
    } catch (error) {
      throw new Error(
        `answer ${i} (seed ${rng.seed}) to line ${describeLine(sent[i]!)}: ${
          (error as Error).message
        }`,
      );
    }
  }
  assert.equal(events.length, answers.length, "no answer to spare");

  // Nothing more is on its way, and the connection still works.
  await client.send({ type: "ping" });
  assert.equal((await client.next()).type, "pong");
  assert.equal(client.ended, false);

  // The history is exactly as it was, and no line reached the model.
  assert.deepEqual(await baseline(client, daemon.paths.dbPath), base);
  assert.equal(llm.chats.length, chatsBefore);

  const rssAfter = await rssKiB(pid);
  const rss = `${rssBefore} → ${rssMiddle} → ${rssAfter} KiB`;
  assert.ok(rssAfter - rssBefore < RSS_GROWTH_LIMIT_KIB, rss);
  assert.ok(rssAfter - rssMiddle < RSS_SECOND_HALF_LIMIT_KIB, rss);

  // A newcomer is served as usual, then the daemon stops cleanly.
  await using late = await daemon.connect();
  assert.equal((await late.next("hello")).state, "idle");
  await client.close();
  await late.close();
  const status = await daemon.stop("SIGTERM");
  assert.equal(status.code, 0, daemon.log.slice(-2000));
  assert.equal(
    daemon.log.match(/ warn bad line /g)?.length ?? 0,
    counts.malformed,
    "each malformed line is logged once",
  );
  assert.ok(!daemon.log.includes(MARKER), "no line content in the log");
  assert.doesNotMatch(daemon.log, / error /, "nothing failed inside");
  assert.ok(counts.lines >= LINES);
  log.info("fuzz figures", {
    seed: rng.seed,
    ...counts,
    answers: answers.length,
    rss_kib: `${rssBefore}/${rssMiddle}/${rssAfter}`,
  });
});
