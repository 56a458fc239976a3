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

Deno.test("an unknown option or a stray argument is refused with exit 64, naming it, before anything runs", async () => {
  const cases: [string[], RegExp][] = [
    [
      ["serve", "--foreground"],
      /^Unknown option --foreground: usage: main\.ts serve /,
    ],
    [["help", "me"], /^Unexpected argument me: usage: main\.ts help /],
    [
      ["flags", "--json"],
      /^Unknown option --json: usage: main\.ts flags \[--shell\|--task\]\n$/,
    ],
    [
      ["flags", "--shell", "--task"],
      /^--shell and --task exclude each other: /,
    ],
    [
      ["flags", "extra"],
      /^Unexpected argument extra: usage: main\.ts flags /,
    ],
    [
      ["web-flags", "--port"],
      /^--port needs a port number from 0 to 65535: usage: main\.ts web-flags /,
    ],
    [
      ["web-flags", "--port", "99999"],
      /^--port takes a port number from 0 to 65535, not "99999": usage: main\.ts web-flags /,
    ],
    [
      ["client-flags", "--task", "voice"],
      /^Unknown client "voice": usage: main\.ts client-flags /,
    ],
    [
      ["client-flags", "-x", "chat"],
      /^Unknown option -x: usage: main\.ts client-flags /,
    ],
    [
      ["check", "--fix"],
      /^Unknown option --fix: usage: main\.ts check \(it takes no options\)\n$/,
    ],
    [
      ["launch", "compile", "--out", "x"],
      /^Unknown option --out: usage: main\.ts launch compile \[--output PATH\]\n$/,
    ],
    [
      ["launch", "compile", "--output="],
      /^--output needs a path: usage: main\.ts launch compile /,
    ],
    [
      ["launch", "compile", "--output"],
      /^--output needs a path: usage: main\.ts launch compile /,
    ],
    [
      ["launch", "serve"],
      /^Unknown launch command "serve": use check or compile /,
    ],
    [["--version"], /^Unknown command "--version"\.\nusage: main\.ts /],
    // The clients' command lines, read the same way.
    [["chat", "--loud"], /^Unknown option --loud: usage: main\.ts chat /],
    [["ask", "-x", "why"], /^Unknown option -x: usage: main\.ts ask /],
    [
      ["export", "1", "--json=yes"],
      /^--json takes no value: usage: main\.ts export /,
    ],
    [["web", "--port"], /^--port needs a port number .*: usage: main\.ts web /],
    [["voice", "now"], /^Unexpected argument now: usage: main\.ts voice\n$/],
    [
      ["voice-flags", "--shell"],
      /^Unknown option --shell: usage: main\.ts voice-flags /,
    ],
  ];
  for (const [args, message] of cases) {
    // No grants at all: a refusal comes before any file, variable or
    // process is touched.
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-prompt", MAIN, ...args],
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 64, `${args.join(" ")}: ${stderr}`);
    assert.match(stderr, message, args.join(" "));
    assert.equal(out.stdout.length, 0, args.join(" "));
  }
});
