/** A tool that needs approval, for the approval tests: `weather`, which records each run. */
import { join } from "node:path";
import { exists } from "./daemon_harness.ts";

/** A tools dir with `weather` (confirm = true), which records each run in ran.txt beside it. */
export async function weatherTools(): Promise<
  AsyncDisposable & { dir: string }
> {
  const dir = await Deno.makeTempDir({ prefix: "da-approval-" });
  await Deno.writeTextFile(
    join(dir, "weather.toml"),
    [
      'description = "The weather for a place"',
      'command = ["./weather.sh", "{place}"]',
      "confirm = true",
      "[parameters.place]",
      'type = "string"',
      "required = true",
    ].join("\n"),
  );
  await Deno.writeTextFile(
    join(dir, "weather.sh"),
    '#!/bin/sh\necho "$1" >> ran.txt\necho "Sunny in $1"\n',
  );
  await Deno.chmod(join(dir, "weather.sh"), 0o755);
  return {
    dir,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

/** The places `weather` ran for, in order. */
export async function runs(dir: string): Promise<string[]> {
  if (!await exists(join(dir, "ran.txt"))) return [];
  return (await Deno.readTextFile(join(dir, "ran.txt"))).trim().split("\n");
}
