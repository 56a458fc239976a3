/** Document converters: resolved from the config, run by the tools' bounded run, and refused clearly when they fail. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AssistantError } from "../../src/base/errors.ts";
import {
  convert,
  converterExecutables,
  resolveConverters,
} from "../../src/tools/convert.ts";

const encode = (s: string) => new TextEncoder().encode(s);

/** A temporary config dir holding one executable script. */
async function withScript(
  body: string,
  run: (dir: string, script: string) => void | Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "da-convert-" });
  try {
    const script = join(dir, "conv.sh");
    await Deno.writeTextFile(script, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    await run(dir, script);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function failure(promise: Promise<unknown>): Promise<AssistantError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  assert.ok(error instanceof AssistantError, String(error));
  assert.equal(error.code, "convert_failed");
  return error;
}

Deno.test("a converter reads the bytes on stdin and its stdout is the text", async () => {
  await withScript("tr a-z A-Z", async (dir) => {
    const converters = resolveConverters(
      { convert: { "Text/X-Shout": ["./conv.sh"] } },
      dir,
    );
    const converter = converters.get("text/x-shout");
    assert.ok(converter, "the type is kept lower case");
    const text = await convert(converter, "a.txt", encode("quiet words\n"), {
      seconds: 5,
      helper: null,
    });
    assert.equal(text, "QUIET WORDS");
  });
});

Deno.test("a converter whose program is not found is left out, and grants nothing", () => {
  const config = {
    convert: {
      "application/pdf": ["no-such-converter-xyz", "-"],
      "text/x-none": [],
    },
  };
  assert.equal(resolveConverters(config, "/", { pathEnv: "/usr/bin" }).size, 0);
  assert.deepEqual(
    converterExecutables(config, "/", { pathEnv: "/usr/bin" }),
    [],
  );
});

Deno.test("a converter that fails, gives nothing or runs past its time is refused, naming the file", async () => {
  await withScript(
    'case "$1" in fail) echo oops >&2; exit 3;; empty) exit 0;; slow) sleep 30;; esac',
    async (dir) => {
      const make = (mode: string) =>
        resolveConverters(
          { convert: { "application/x-test": ["./conv.sh", mode] } },
          dir,
        ).get("application/x-test")!;
      const options = { seconds: 5, helper: null };
      assert.equal(
        (await failure(convert(make("fail"), "r.x", encode("x"), options)))
          .message,
        "r.x: its converter failed with exit status 3",
      );
      assert.equal(
        (await failure(convert(make("empty"), "r.x", encode("x"), options)))
          .message,
        "r.x: its converter gave no text",
      );
      const started = performance.now();
      const slow = await failure(
        convert(make("slow"), "r.x", encode("x"), {
          seconds: 0.3,
          helper: null,
        }),
      );
      assert.equal(
        slow.message,
        "r.x: its converter took longer than 0.3 s and was stopped",
      );
      assert.ok(performance.now() - started < 10_000);
    },
  );
});

Deno.test("a converter that writes more than 8 MiB of text is refused, naming the file", async () => {
  // 9 MiB of text, more than any context holds.
  await withScript("head -c 9437184 /dev/zero | tr '\\0' a", async (dir) => {
    const converter = resolveConverters(
      { convert: { "application/x-big": ["./conv.sh"] } },
      dir,
    ).get("application/x-big")!;
    const error = await failure(
      convert(converter, "big.x", encode("x"), { seconds: 20, helper: null }),
    );
    assert.equal(
      error.message,
      "big.x: its converter wrote more than 8 MiB of text",
    );
  });
});

Deno.test("a converter found is granted its program, resolved to a path", async () => {
  await withScript("cat", (dir, script) => {
    const config = { convert: { "text/x-cat": ["./conv.sh"] } };
    assert.deepEqual(converterExecutables(config, dir, { pathEnv: "" }), [
      script,
    ]);
  });
});

const pdftotext = resolveConverters(
  { convert: { "application/pdf": ["pdftotext", "-layout", "-", "-"] } },
  "/",
).get("application/pdf");

Deno.test({
  name: "the default converter turns a PDF into its text (pdftotext)" +
    (pdftotext === undefined
      ? " (skipped: no pdftotext on PATH, Debian's poppler-utils)"
      : ""),
  ignore: pdftotext === undefined,
  async fn() {
    const pdf = await Deno.readFile(
      new URL("../fixtures/files/report.pdf", import.meta.url),
    );
    const text = await convert(pdftotext!, "report.pdf", pdf, {
      seconds: 20,
      helper: null,
    });
    assert.equal(text, "Quarterly revenue rose by nine percent.");
  },
});
