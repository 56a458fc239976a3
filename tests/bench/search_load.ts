/**
 * Runs searches back to back on a history file from its own process, for a
 * given number of seconds: the reference load beside the daemon's own
 * searches (same queries, same code, but outside the daemon's process).
 *
 *   deno run --allow-read --allow-write tests/bench/search_load.ts DB SECONDS Q…
 *
 * Prints the number of searches run.
 */
import { DatabaseSync } from "node:sqlite";
import { prepareSearch } from "../../src/store/search.ts";

if (import.meta.main) {
  const [path, seconds, ...queries] = Deno.args;
  if (path === undefined || !(Number(seconds) > 0) || queries.length === 0) {
    throw new TypeError(
      "Usage: search_load.ts DB SECONDS QUERY…; give a file, a positive time and at least one query.",
    );
  }
  const db = new DatabaseSync(path, { readOnly: true });
  const search = prepareSearch(db);
  const end = performance.now() + Number(seconds) * 1000;
  let n = 0;
  while (performance.now() < end) {
    search(queries[n % queries.length]!, 50);
    n++;
  }
  db.close();
  await Deno.stdout.write(new TextEncoder().encode(`${n}\n`));
}
