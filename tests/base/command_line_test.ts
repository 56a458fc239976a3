import assert from "node:assert/strict";
import { readCommandLine, UsageError } from "../../src/base/command_line.ts";

const USAGE = "usage: x [--loud] [--dir DIR] [--name NAME]";

const LINE = {
  options: {
    loud: { type: "boolean", short: "l" },
    dir: { type: "string" },
    name: { type: "string" },
  },
  usage: USAGE,
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
    [["--quiet"], `Unknown option --quiet: ${USAGE}`],
    [["-q"], `Unknown option -q: ${USAGE}`],
    [["-lq"], `Unknown option -q: ${USAGE}`],
    [["--loud=yes"], `--loud takes no value: ${USAGE}`],
    [["--dir"], `--dir needs a directory: ${USAGE}`],
    [["--name"], `--name needs a value: ${USAGE}`],
    // A value that looks like an option is taken for a forgotten value.
    [["--dir", "--loud"], `--dir needs a directory: ${USAGE}`],
    // The first mistake is the one named.
    [["--loud=1", "--quiet"], `--loud takes no value: ${USAGE}`],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => readCommandLine(args, LINE), (error) => {
      assert.ok(error instanceof UsageError);
      assert.ok(error instanceof TypeError, "callers may catch TypeError");
      assert.equal(error.name, "UsageError");
      assert.equal(error.message, message, args.join(" "));
      return true;
    });
  }
});

Deno.test("a stray word is named, quoted when it holds a space or a quote", () => {
  const closed = { ...LINE, positionals: false };
  const cases: [string[], string][] = [
    [["stray"], `Unexpected argument stray: ${USAGE}`],
    [["a b"], `Unexpected argument "a b": ${USAGE}`],
    [["it's"], `Unexpected argument "it's": ${USAGE}`],
    [["--loud", "--", "-"], `Unexpected argument -: ${USAGE}`],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => readCommandLine(args, closed), { message });
  }
  // An option named with a quote in it is quoted whole.
  assert.throws(() => readCommandLine(["--qu'iet"], LINE), {
    message: `Unknown option "--qu'iet": ${USAGE}`,
  });
});
