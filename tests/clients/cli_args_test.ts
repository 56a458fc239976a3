import assert from "node:assert/strict";
import { readCommandLine } from "../../src/clients/cli_args.ts";

const LINE = {
  options: {
    loud: { type: "boolean" },
    dir: { type: "string" },
  },
  usage: "usage: x [--loud] [--dir DIR]",
  positionals: true,
  needs: { dir: "a directory" },
} as const;

Deno.test("options and words are read by parseArgs; -- ends the options", () => {
  const read = readCommandLine(["--loud", "a", "--dir=/tmp", "b"], LINE);
  assert.equal(read.values.loud, true);
  assert.equal(read.values.dir, "/tmp");
  assert.deepEqual(read.positionals, ["a", "b"]);
  assert.deepEqual(
    readCommandLine(["--", "--loud", "-"], LINE).positionals,
    ["--loud", "-"],
  );
});

Deno.test("each mistake is named, then the usage", () => {
  const cases: [string[], string][] = [
    [["--quiet"], "Unknown option --quiet: usage: x [--loud] [--dir DIR]"],
    [["-q"], "Unknown option -q: usage: x [--loud] [--dir DIR]"],
    [["--loud=yes"], "--loud takes no value: usage: x [--loud] [--dir DIR]"],
    [["--dir"], "--dir needs a directory: usage: x [--loud] [--dir DIR]"],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => readCommandLine(args, LINE), {
      name: "TypeError",
      message,
    });
  }
  assert.throws(
    () =>
      readCommandLine(["stray"], {
        ...LINE,
        positionals: false,
        unknown: "argument",
      }),
    { message: "Unknown argument stray: usage: x [--loud] [--dir DIR]" },
  );
});
