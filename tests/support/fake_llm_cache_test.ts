/** The fake's prompt cache against llama-server's rules: the common prefix, n_cache_reuse's shifted chunks, slot choice, the host-memory cache. */
import assert from "node:assert/strict";
import {
  type CacheRequest,
  PromptCache,
  type PromptCacheOptions,
  reusedTokens,
  type Token,
} from "./fake_llm_cache.ts";

/** Tokens named by letters and numbers: "s1 s2 a1" → ["s1", "s2", "a1"]. */
function t(text: string): Token[] {
  return text.split(" ").filter((token) => token !== "");
}

/** A run of n tokens: run("a", 3) → a0 a1 a2. */
function run(name: string, n: number): string {
  return Array.from({ length: n }, (_, i) => `${name}${i}`).join(" ");
}

const ASK: CacheRequest = { nCacheReuse: 0, cachePrompt: true, idSlot: -1 };
const ONE: PromptCacheOptions = { slots: 1, shift: true, cacheRam: true };

Deno.test("reuse: the common prefix, then runs of at least n_cache_reuse that continue the prompt", () => {
  const cache = t(
    `${run("s", 4)} ${run("a", 5)} ${run("b", 5)} ${run("c", 5)}`,
  );
  // The turn "a" left the window: "b" and "c" are shifted into place.
  const slid = t(`${run("s", 4)} ${run("b", 5)} ${run("c", 5)} q0 q1`);
  assert.deepEqual(reusedTokens(cache, slid, 0), { cached: 4, shifted: 0 });
  assert.deepEqual(reusedTokens(cache, slid, 5), { cached: 14, shifted: 10 });
  // The kept turns are one run of 10: at n_cache_reuse 11 they are read again.
  assert.deepEqual(reusedTokens(cache, slid, 10), { cached: 14, shifted: 10 });
  assert.deepEqual(reusedTokens(cache, slid, 11), { cached: 4, shifted: 0 });
  // Two spans removed: each kept run is found in turn.
  const twice = t(`${run("s", 4)} ${run("b", 5)} q0`);
  assert.deepEqual(
    reusedTokens(t(`${run("s", 4)} x ${run("b", 5)} y q0`), twice, 3),
    { cached: 9, shifted: 5 },
  );
});

Deno.test("reuse: text inserted after the prefix is not bridged, as llama-server's loop only skips cached tokens", () => {
  const cache = t(`${run("s", 4)} ${run("a", 8)} ${run("b", 8)}`);
  const inserted = t(`${run("s", 4)} summary ${run("a", 8)} ${run("b", 8)}`);
  assert.deepEqual(reusedTokens(cache, inserted, 4), { cached: 4, shifted: 0 });
});

Deno.test("a prompt held whole still evaluates one token; cache_prompt false evaluates all", () => {
  const cache = new PromptCache(ONE);
  const prompt = t(run("p", 10));
  cache.begin(prompt, ASK).end(t("r0 r1"));
  assert.equal(cache.begin(prompt, ASK).cacheN, 9);
  const fresh = new PromptCache(ONE);
  fresh.begin(prompt, ASK).end([]);
  assert.equal(fresh.begin(prompt, { ...ASK, cachePrompt: false }).cacheN, 0);
});

Deno.test("a slot holds its prompt and reply: the next prompt that extends them reuses both", () => {
  const cache = new PromptCache(ONE);
  const first = t(`${run("s", 6)} q0`);
  const lease = cache.begin(first, ASK);
  assert.deepEqual([lease.slot, lease.cacheN], [0, 0]);
  lease.end(t("r0 r1 r2"));
  const next = cache.begin(t(`${run("s", 6)} q0 r0 r1 r2 end q1`), ASK);
  assert.deepEqual([next.slot, next.cacheN], [0, 10]);
});

Deno.test("a model that cannot shift ignores n_cache_reuse", () => {
  const kept = `${run("b", 8)} ${run("c", 8)}`;
  for (const shift of [true, false]) {
    const cache = new PromptCache({ ...ONE, shift });
    cache.begin(t(`${run("s", 4)} ${run("a", 8)} ${kept}`), ASK).end([]);
    const slid = cache.begin(t(`${run("s", 4)} ${kept} q`), {
      ...ASK,
      nCacheReuse: 4,
    });
    assert.equal(slid.cacheN, shift ? 20 : 4, `shift ${shift}`);
    assert.equal(slid.shifted, shift ? 16 : 0);
  }
});

Deno.test("slots: a prompt goes to the idle slot it shares most with, else the least recently used", () => {
  const cache = new PromptCache({ ...ONE, slots: 2 });
  const a = t(run("a", 10));
  const b = t(run("b", 10));
  // Both slots are unused: the server's `<=` picks the later one.
  const first = cache.begin(a, ASK);
  assert.equal(first.slot, 1);
  first.end([]);
  const second = cache.begin(b, ASK);
  assert.equal(second.slot, 0);
  second.end([]);
  const again = cache.begin(t(`${run("a", 10)} more`), ASK);
  assert.deepEqual([again.slot, again.cacheN], [1, 10]);
  again.end([]);
  const other = cache.begin(t(`${run("b", 10)} more`), ASK);
  assert.deepEqual([other.slot, other.cacheN], [0, 10]);
});

Deno.test("slots: every slot busy serves the request from an empty cache and leaves the slots as they were", () => {
  const cache = new PromptCache(ONE);
  const prompt = t(run("p", 8));
  cache.begin(prompt, ASK).end([]);
  const busy = cache.begin(prompt, ASK);
  const overlap = cache.begin(prompt, ASK);
  assert.deepEqual([overlap.slot, overlap.cacheN], [null, 0]);
  overlap.end(t("x y"));
  busy.end([]);
  assert.equal(cache.begin(prompt, ASK).cacheN, 7);
});

Deno.test("slots: id_slot picks the slot", () => {
  const cache = new PromptCache({ ...ONE, slots: 3 });
  const prompt = t(run("p", 8));
  cache.begin(prompt, { ...ASK, idSlot: 0 }).end([]);
  const lease = cache.begin(prompt, { ...ASK, idSlot: 2 });
  assert.deepEqual([lease.slot, lease.cacheN], [2, 0]);
});

Deno.test("host memory: a slot that another prompt takes over gets its own prompt back later", () => {
  const conversation = t(`${run("s", 4)} ${run("c", 40)}`);
  const title = t(`${run("s", 4)} ${run("t", 10)}`);
  const followUp = [...conversation, ...t("r0 r1 q1")];
  for (const cacheRam of [true, false]) {
    const cache = new PromptCache({ ...ONE, cacheRam });
    cache.begin(conversation, ASK).end(t("r0 r1"));
    // A side request (a title) on the one slot: only the shared start is reused.
    const side = cache.begin(title, ASK);
    assert.equal(side.cacheN, 4);
    side.end(t("x"));
    const back = cache.begin(followUp, ASK);
    assert.equal(back.cacheN, cacheRam ? 46 : 4, `cacheRam ${cacheRam}`);
  }
});

Deno.test("clear empties the slots and the host memory", () => {
  const cache = new PromptCache(ONE);
  const prompt = t(run("p", 8));
  cache.begin(prompt, ASK).end([]);
  cache.clear();
  assert.equal(cache.begin(prompt, ASK).cacheN, 0);
});
