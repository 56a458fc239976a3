import assert from "node:assert/strict";
import { Store } from "../../src/store/store.ts";

Deno.test("what was learnt of a model's prompt cache is kept across openings of the file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "da-store-" });
  try {
    const path = `${dir}/history.db`;
    let clock = 1_800_000_000_000;
    {
      using store = new Store(path, { now: () => clock });
      assert.equal(store.cacheShift("/srv/models/gemma.gguf"), null);
      store.setCacheShift("/srv/models/gemma.gguf", false);
      store.setCacheShift("/srv/models/qwen.gguf", true);
      clock += 60_000;
      store.setCacheShift("/srv/models/qwen.gguf", false);
    }
    using store = new Store(path);
    assert.deepEqual(store.cacheShift("/srv/models/gemma.gguf"), {
      shifts: false,
      learned: 1_800_000_000,
    });
    assert.deepEqual(store.cacheShift("/srv/models/qwen.gguf"), {
      shifts: false,
      learned: 1_800_000_060,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
