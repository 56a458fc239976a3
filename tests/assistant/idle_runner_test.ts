/** Side requests that run one at a time while no reply does, and give way to one. */
import assert from "node:assert/strict";
import { IdleRunner } from "../../src/assistant/idle_runner.ts";

/** A runner whose jobs wait on the test: each run reports its job and signal. */
function runner(busy: () => boolean = () => false) {
  const runs: { job: string; signal: AbortSignal; end: () => void }[] = [];
  let started = Promise.withResolvers<void>();
  const side = new IdleRunner<string>({ busy });
  const job = (name: string) => (signal: AbortSignal) => {
    const { promise, resolve } = Promise.withResolvers<void>();
    signal.addEventListener("abort", () => resolve());
    runs.push({ job: name, signal, end: resolve });
    started.resolve();
    return promise;
  };
  const idle = {
    request: (key: string, name: string) => side.request(key, job(name)),
    cancel: (matches: (key: string) => boolean) => side.cancel(matches),
    pause: () => side.pause(),
    resume: () => side.resume(),
    settled: () => side.settled(),
    [Symbol.dispose]: () => side[Symbol.dispose](),
  };
  const nextStart = async () => {
    await started.promise;
    started = Promise.withResolvers<void>();
  };
  return { idle, runs, nextStart };
}

Deno.test("a job runs when nothing is busy; one that gave way to a reply runs again at the next pause", async () => {
  let busy = false;
  const { idle, runs, nextStart } = runner(() => busy);
  idle.request("a", "title of a");
  await nextStart();
  // A reply starts.
  busy = true;
  idle.pause();
  assert.equal(runs[0]!.signal.aborted, true);
  await idle.settled();
  assert.equal(runs.length, 1);
  // It ends.
  busy = false;
  idle.resume();
  await nextStart();
  assert.deepEqual(runs.map((r) => r.job), ["title of a", "title of a"]);
  runs[1]!.end();
  await idle.settled();
  // Done: nothing more runs.
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(runs.length, 2);
  idle[Symbol.dispose]();
});

Deno.test("nothing starts while busy; a cancelled job never runs again, and asking again replaces a waiting job", async () => {
  let busy = true;
  const { idle, runs, nextStart } = runner(() => busy);
  idle.request("a", "first");
  idle.request("a", "second");
  idle.request("b", "other");
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(runs.length, 0);
  busy = false;
  idle.cancel((key) => key === "b");
  idle.resume();
  await nextStart();
  assert.deepEqual(runs.map((r) => r.job), ["second"]);
  idle.cancel((key) => key === "a");
  assert.equal(runs[0]!.signal.aborted, true);
  await idle.settled();
  idle.resume();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(runs.length, 1);
  idle[Symbol.dispose]();
});

Deno.test("disposing aborts the job in flight and drops the rest", async () => {
  const { idle, runs, nextStart } = runner();
  idle.request("a", "one");
  idle.request("b", "two");
  await nextStart();
  idle[Symbol.dispose]();
  assert.equal(runs[0]!.signal.aborted, true);
  await idle.settled();
  idle.request("c", "late");
  idle.resume();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(runs.length, 1);
});
