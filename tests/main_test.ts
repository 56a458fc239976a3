/** The command line's one exit point. */
import assert from "node:assert/strict";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** Runs main.ts with its stdout a pipe whose reader has gone, as `main.ts … | head -1` once head exits. */
async function intoClosedPipe(
  args: string[],
): Promise<{ code: number; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--no-prompt", MAIN, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Closed before the process has started: its first write finds no reader.
  await child.stdout.cancel();
  const stderr = await new Response(child.stderr).text();
  return { code: (await child.status).code, stderr };
}

Deno.test("writing to a closed stdout exits quietly, as a process ended by SIGPIPE", async () => {
  for (const args of [["--help"], ["help"]]) {
    const { code, stderr } = await intoClosedPipe(args);
    assert.equal(stderr, "", args.join(" "));
    assert.equal(code, 141, args.join(" "));
  }
});
