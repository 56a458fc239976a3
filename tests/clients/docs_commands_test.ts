/**
 * The commands the README and the clients' page give for chat, ask and
 * export, as a reader copies them: quiet (`deno task -q`), so nothing but
 * the client's own output shows.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;
const PAGES = ["README.md", "docs/clients.md"];

/** Every `deno task <client>` a page writes, with its flags between. */
function taskCommands(text: string): string[] {
  return [
    ...text.matchAll(
      /deno\s+task((?:\s+-{1,2}[a-z]+)*)\s+(chat|ask|export)\b/g,
    ),
  ]
    .map((match) => match[0].replace(/\s+/g, " "));
}

Deno.test("the README and the clients' page start chat, ask and export with deno task -q, which prints no line of its own", async () => {
  for (const page of PAGES) {
    const commands = taskCommands(await Deno.readTextFile(ROOT + page));
    assert.ok(commands.length > 0, `${page} names no client task`);
    for (const command of commands) {
      assert.match(command, / (-q|--quiet)\b/, `${page}: ${command}`);
    }
  }
});

Deno.test("deno task -q chat starts without the task's echo line, and deno task chat would print one", async () => {
  const run = async (quiet: boolean) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", ...(quiet ? ["-q"] : []), "chat", "--bad-flag"],
      cwd: ROOT,
      env: { NO_COLOR: "1", XDG_RUNTIME_DIR: "/nonexistent-run" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return new TextDecoder().decode(output.stderr);
  };
  // A bad flag ends the client at once, so only what precedes it shows.
  assert.equal(
    await run(true),
    "Unknown option --bad-flag: usage: main.ts chat [--no-think] [--raw] [--export-dir DIR]\n",
  );
  assert.match(await run(false), /^Task chat \$\(deno run/);
});
