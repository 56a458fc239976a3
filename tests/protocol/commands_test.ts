import assert from "node:assert/strict";
import { COMMAND_ERROR_CODES } from "../../src/base/error_codes.ts";
import {
  DEFAULT_SEARCH_LIMIT,
  parseCommand,
  parseLine,
} from "../../src/protocol/commands.ts";

Deno.test("parseLine answers bad command, saying what a line must be, for anything that is not an object with a string type", () => {
  for (
    const line of [
      "",
      "{",
      "[]",
      "3",
      "null",
      '"x"',
      "true",
      "{}",
      '{"type":3}',
      '{"type":null}',
    ]
  ) {
    assert.deepEqual(
      parseLine(line),
      {
        ok: false,
        code: "bad_command",
        message: 'bad command: a JSON object with a string "type" per line',
      },
      line,
    );
  }
});

Deno.test("parseLine names an unknown command", () => {
  assert.deepEqual(parseLine('{"type":"dance"}'), {
    ok: false,
    code: "unknown_command",
    message: "unknown command dance",
  });
});

Deno.test("ask needs string text and ignores blank text", () => {
  assert.deepEqual(parseCommand({ type: "ask" }), {
    ok: false,
    code: "bad_text",
    message: "bad text",
  });
  assert.deepEqual(parseCommand({ type: "ask", text: 5 }), {
    ok: false,
    code: "bad_text",
    message: "bad text",
  });
  assert.deepEqual(parseCommand({ type: "ask", text: " \n\t" }), {
    ok: true,
    command: null,
  });
  assert.deepEqual(parseCommand({ type: "ask", text: " hi " }), {
    ok: true,
    command: { type: "ask", text: " hi " },
  });
});

Deno.test("open and delete need an integer id", () => {
  for (const type of ["open", "delete"]) {
    for (const id of [undefined, "1", 1.5, NaN, null, 2 ** 60, [1]]) {
      assert.deepEqual(parseCommand({ type, id }), {
        ok: false,
        code: "bad_id",
        message: "bad id",
      }, `${type} ${id}`);
    }
    assert.deepEqual(parseCommand({ type, id: -3 }), {
      ok: true,
      command: { type, id: -3 },
    });
  }
});

Deno.test("search needs a string query and defaults its limit", () => {
  assert.deepEqual(parseCommand({ type: "search" }), {
    ok: false,
    code: "bad_query",
    message: "bad query",
  });
  assert.deepEqual(parseCommand({ type: "search", q: 1 }), {
    ok: false,
    code: "bad_query",
    message: "bad query",
  });
  assert.deepEqual(parseCommand({ type: "search", q: "x", limit: 0 }), {
    ok: false,
    code: "bad_limit",
    message: "bad limit",
  });
  assert.deepEqual(parseCommand({ type: "search", q: "x" }), {
    ok: true,
    command: { type: "search", q: "x", limit: DEFAULT_SEARCH_LIMIT },
  });
});

Deno.test("list takes an optional positive limit", () => {
  assert.deepEqual(parseCommand({ type: "list" }), {
    ok: true,
    command: { type: "list" },
  });
  assert.deepEqual(parseCommand({ type: "list", limit: 2 }), {
    ok: true,
    command: { type: "list", limit: 2 },
  });
  assert.deepEqual(parseCommand({ type: "list", limit: "2" }), {
    ok: false,
    code: "bad_limit",
    message: "bad limit",
  });
});

Deno.test("stop, new, retry and ping carry no fields", () => {
  for (const type of ["stop", "new", "retry", "ping"]) {
    assert.deepEqual(parseCommand({ type, extra: 1 }), {
      ok: true,
      command: { type },
    });
  }
});

Deno.test("a lone surrogate in a question becomes U+FFFD, as the store keeps it", () => {
  assert.deepEqual(parseCommand({ type: "ask", text: "a\ud800b" }), {
    ok: true,
    command: { type: "ask", text: "a\ufffdb" },
  });
});

Deno.test("an unknown type is echoed cut at 64 characters, never inside one", () => {
  const type = "😀".repeat(70);
  const parsed = parseCommand({ type });
  assert.equal(parsed.ok, false);
  assert.equal(
    !parsed.ok && parsed.message,
    `unknown command ${"😀".repeat(64)}`,
  );
});

Deno.test("ref: a string of at most 128 characters or a safe integer, on any command", () => {
  for (
    const ref of [
      "",
      "a",
      "é".repeat(128),
      "😀".repeat(128),
      0,
      -7,
      2 ** 53 - 1,
    ]
  ) {
    assert.deepEqual(parseCommand({ type: "ping", ref }), {
      ok: true,
      command: { type: "ping", ref },
    }, String(ref));
  }
  for (
    const ref of [
      "x".repeat(129),
      "😀".repeat(129),
      0.5,
      2 ** 53,
      NaN,
      null,
      false,
      {},
      [],
    ]
  ) {
    // Refused whatever the command, and never echoed.
    for (
      const value of [{ type: "ping", ref }, { type: "nope", ref }, { ref }]
    ) {
      assert.deepEqual(parseCommand(value), {
        ok: false,
        code: "bad_ref",
        message: "bad ref",
      });
    }
  }
});

Deno.test("ref is echoed on every validation error it can be", () => {
  assert.deepEqual(parseCommand({ type: "ask", text: 1, ref: "r" }), {
    ok: false,
    code: "bad_text",
    message: "bad text",
    ref: "r",
  });
  assert.deepEqual(parseCommand({ type: "dance", ref: 4 }), {
    ok: false,
    code: "unknown_command",
    message: "unknown command dance",
    ref: 4,
  });
  assert.deepEqual(parseCommand({ ref: "r" }), {
    ok: false,
    code: "bad_command",
    message: 'bad command: a JSON object with a string "type" per line',
    ref: "r",
  });
  // A blank question is still ignored, ref or not.
  assert.deepEqual(parseCommand({ type: "ask", text: " ", ref: "r" }), {
    ok: true,
    command: null,
  });
});

Deno.test("retry, edit, rename, export and new private", () => {
  assert.deepEqual(parseCommand({ type: "retry", ref: 1 }), {
    ok: true,
    command: { type: "retry", ref: 1 },
  });
  assert.deepEqual(parseCommand({ type: "edit", text: "a\ud800" }), {
    ok: true,
    command: { type: "edit", text: "a\ufffd" },
  });
  assert.deepEqual(parseCommand({ type: "edit" }), {
    ok: false,
    code: "bad_text",
    message: "bad text",
  });
  assert.deepEqual(parseCommand({ type: "edit", text: "\n" }), {
    ok: true,
    command: null,
  });
  assert.deepEqual(parseCommand({ type: "rename", id: 2, title: " A\t b " }), {
    ok: true,
    command: { type: "rename", id: 2, title: "A b" },
  });
  for (const title of ["", " ", "x".repeat(201), 3, null]) {
    assert.deepEqual(parseCommand({ type: "rename", id: 2, title }), {
      ok: false,
      code: "bad_title",
      message: "bad title",
    });
  }
  assert.deepEqual(parseCommand({ type: "rename", id: "2", title: "x" }), {
    ok: false,
    code: "bad_id",
    message: "bad id",
  });
  assert.deepEqual(parseCommand({ type: "export", id: 2 }), {
    ok: true,
    command: { type: "export", id: 2, format: "markdown" },
  });
  assert.deepEqual(parseCommand({ type: "export", id: 2, format: "json" }), {
    ok: true,
    command: { type: "export", id: 2, format: "json" },
  });
  // Only an absent format is the default: null, "" or any other is refused.
  for (const format of ["html", null, "", false, "JSON"]) {
    assert.deepEqual(parseCommand({ type: "export", id: 2, format }), {
      ok: false,
      code: "bad_format",
      message: "bad format",
    }, String(format));
  }
  assert.deepEqual(parseCommand({ type: "new", private: true }), {
    ok: true,
    command: { type: "new", private: true },
  });
  assert.deepEqual(parseCommand({ type: "new", private: false }), {
    ok: true,
    command: { type: "new" },
  });
  assert.deepEqual(parseCommand({ type: "new", private: 1 }), {
    ok: false,
    code: "bad_private",
    message: "bad private",
  });
});

Deno.test("an inherited property name is no command", () => {
  for (const type of ["constructor", "__proto__", "toString"]) {
    assert.deepEqual(parseCommand({ type }), {
      ok: false,
      code: "unknown_command",
      message: `unknown command ${type}`,
    });
  }
});

Deno.test("approve needs a string call and a boolean allow", () => {
  assert.deepEqual(
    parseLine('{"type":"approve","call":"c-1","allow":true}'),
    { ok: true, command: { type: "approve", call: "c-1", allow: true } },
  );
  assert.deepEqual(
    parseLine('{"type":"approve","call":"c-1","allow":false}'),
    { ok: true, command: { type: "approve", call: "c-1", allow: false } },
  );
  for (const call of ["", 7, null, undefined]) {
    assert.deepEqual(
      parseCommand({ type: "approve", call, allow: true }),
      { ok: false, code: "bad_call", message: "bad call" },
    );
  }
  for (const allow of ["yes", 1, null, undefined]) {
    assert.deepEqual(
      parseCommand({ type: "approve", call: "c-1", allow }),
      { ok: false, code: "bad_allow", message: "bad allow" },
    );
  }
});

Deno.test("listen needs a boolean on; its ref is kept", () => {
  assert.deepEqual(parseLine('{"type":"listen","on":true,"ref":"talk-1"}'), {
    ok: true,
    command: { type: "listen", on: true, ref: "talk-1" },
  });
  assert.deepEqual(parseCommand({ type: "listen", on: false }), {
    ok: true,
    command: { type: "listen", on: false },
  });
  for (const on of ["true", 1, 0, null, undefined, [true]]) {
    assert.deepEqual(
      parseCommand({ type: "listen", on, ref: 3 }),
      { ok: false, code: "bad_on", message: "bad on", ref: 3 },
      JSON.stringify(on),
    );
  }
});

Deno.test("every refusal carries a command error code from the protocol's list", () => {
  const values: unknown[] = [
    null,
    { ref: 0.5 },
    { type: "dance" },
    { type: "ask" },
    { type: "search" },
    { type: "search", q: "x", limit: -1 },
    { type: "open" },
    { type: "rename", id: 1 },
    { type: "export", id: 1, format: null },
    { type: "new", private: "yes" },
    { type: "approve" },
    { type: "approve", call: "c" },
    { type: "listen" },
  ];
  const codes = new Set<string>();
  for (const value of values) {
    const parsed = parseCommand(value);
    assert.equal(parsed.ok, false, JSON.stringify(value));
    if (parsed.ok) continue;
    assert.ok(
      (COMMAND_ERROR_CODES as readonly string[]).includes(parsed.code),
      parsed.code,
    );
    codes.add(parsed.code);
  }
  assert.equal(codes.size, values.length, [...codes].join(" "));
});
