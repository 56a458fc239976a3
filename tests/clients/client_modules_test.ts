import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

/** The modules `deno info` finds from `entry`, relative to the project root. */
async function graph(entry: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const info = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    modules: { specifier: string }[];
  };
  return info.modules.map((module) => module.specifier.replace(ROOT.href, ""));
}

// What a client holds at its prompt is what it loads: the config parser
// (zod, smol-toml) alone cost the terminal client ≈ 8 MB of its RSS.
for (const client of ["chat", "ask", "export"]) {
  Deno.test(`${client} loads neither the config parser nor any part of the daemon`, async () => {
    const modules = await graph(`src/clients/${client}.ts`);
    assert.ok(modules.includes(`src/clients/${client}.ts`));
    const daemonSide = modules.filter((specifier) =>
      /^npm:\/(zod|smol-toml)@/.test(specifier) ||
      /^src\/(base\/config|store|assistant|llm|server|tools|launch)\b/.test(
        specifier,
      )
    );
    assert.deepEqual(daemonSide, []);
  });
}
