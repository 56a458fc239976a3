import assert from "node:assert/strict";
import { join } from "node:path";
import { WEB_DIR } from "../../src/web/static_files.ts";

Deno.test("each vendored file is the one its README names, by sha256, with its licence", async () => {
  const dir = join(WEB_DIR, "vendor");
  const readme = await Deno.readTextFile(join(dir, "README.md"));
  const rows = [
    ...readme.matchAll(/^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$/gm),
  ];
  assert.ok(rows.length > 0, "the README lists the vendored files");
  for (const [, name, sha] of rows) {
    const bytes = await Deno.readFile(join(dir, name!));
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join(
      "",
    );
    assert.equal(hex, sha, name);
  }
  const files = [];
  for await (const entry of Deno.readDir(dir)) files.push(entry.name);
  for (
    const file of files.filter((f) => f.endsWith(".mjs") || f.endsWith(".js"))
  ) {
    assert.ok(
      rows.some(([, name]) => name === file),
      `${file} is not in the README`,
    );
    const licence = file.replace(/\..*$/, "") + ".LICENSE.txt";
    assert.ok(files.includes(licence), `${file} has no ${licence}`);
  }
});
