import assert from "node:assert/strict";
import {
  cycles,
  folderGraph,
  LAYERS,
  moduleGraph,
} from "./support/import_graph.ts";

Deno.test("every folder of src imports only the layers below it", async () => {
  const folders = folderGraph(await moduleGraph());
  const wrong: string[] = [];
  for (const [from, edges] of folders) {
    if (from === "main.ts") continue;
    const allowed = LAYERS[from];
    if (allowed === undefined) {
      wrong.push(`${from} has no place in LAYERS`);
      continue;
    }
    for (const to of edges.keys()) {
      if (!allowed.includes(to)) wrong.push(`${from} imports ${to}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("no module imports itself back, however indirectly", async () => {
  const graph = await moduleGraph();
  assert.deepEqual(cycles(graph).map((cycle) => cycle.join(" -> ")), []);
});

Deno.test("the cycle finder finds a cycle of three and none in a chain", () => {
  const loop = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]]]);
  assert.deepEqual(cycles(loop), [["a", "b", "c", "a"]]);
  const chain = new Map([["a", ["b"]], ["b", ["c"]], ["c", []]]);
  assert.deepEqual(cycles(chain), []);
});
