/**
 * The page's scripts are type-checked against the protocol's own events
 * (`src/protocol/events.ts`): a script that reads a field the daemon never
 * sends fails `deno check`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT } from "../support/import_graph.ts";

/** `deno check` of some files with the repository's settings: its exit code and what it said. */
async function check(files: string[]): Promise<{ code: number; out: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--quiet", "--config", join(ROOT, "deno.json"), ...files],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
  }).output();
  const decoder = new TextDecoder();
  return { code, out: decoder.decode(stdout) + decoder.decode(stderr) };
}

/** A page script that reads `field` of a `hello`. */
function reader(field: string): string {
  const parts = pathToFileURL(join(ROOT, "web", "model_parts.js")).href;
  return [
    "// @ts-check",
    `/** @param {import("${parts}").EventOf<"hello">} event */`,
    `export const read = (event) => event.${field};`,
    "",
  ].join("\n");
}

Deno.test("the page's scripts type-check against the protocol's events", async () => {
  const scripts: string[] = [];
  for await (const entry of Deno.readDir(join(ROOT, "web"))) {
    if (entry.isFile && entry.name.endsWith(".js")) {
      scripts.push(join(ROOT, "web", entry.name));
    }
  }
  assert.ok(scripts.length >= 10, scripts.join(", "));
  const { code, out } = await check(scripts);
  assert.equal(code, 0, out);
});

Deno.test("a page script reading a hello field the daemon never sends fails the check", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const sent = join(dir, "sent.js");
    const unsent = join(dir, "unsent.js");
    await Deno.writeTextFile(sent, reader("ctx_summarized"));
    await Deno.writeTextFile(unsent, reader("ctx_summarised"));
    const good = await check([sent]);
    assert.equal(good.code, 0, good.out);
    const bad = await check([unsent]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.out, /Property 'ctx_summarised' does not exist/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
