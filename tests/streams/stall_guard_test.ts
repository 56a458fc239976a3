import assert from "node:assert/strict";
import { StallGuardStream } from "../../src/streams/stall_guard.ts";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("Expected a rejection");
}

Deno.test("stall guard errors after silence, calls onStall and cancels the source", async () => {
  const cancelled = Promise.withResolvers<unknown>();
  let stalls = 0;
  const source = new ReadableStream<string>({
    start(controller) {
      controller.enqueue("first");
    },
    cancel(reason) {
      cancelled.resolve(reason);
    },
  });
  const reader = source
    .pipeThrough(
      new StallGuardStream<string>({
        ms: 150,
        onStall: () => stalls++,
        stalled: (ms) => new RangeError(`quiet for ${ms} ms`),
      }),
    )
    .getReader();
  assert.deepEqual(await reader.read(), { done: false, value: "first" });
  const error = await rejection(reader.read());
  assert.ok(error instanceof RangeError);
  assert.equal(error.message, "quiet for 150 ms");
  assert.equal(stalls, 1);
  assert.equal(await cancelled.promise, error);
});

Deno.test("stall guard passes chunks through and stops its clock at the end", async () => {
  let stalls = 0;
  const out = await Array.fromAsync(
    ReadableStream.from(["a", "b", "c"]).pipeThrough(
      new StallGuardStream<string>({ ms: 60_000, onStall: () => stalls++ }),
    ),
  );
  assert.deepEqual(out, ["a", "b", "c"]);
  assert.equal(stalls, 0);
});

Deno.test("stall guard without a stalled option errors with a TimeoutError", async () => {
  const source = new ReadableStream<string>({ start() {} });
  const error = await rejection(
    Array.fromAsync(source.pipeThrough(new StallGuardStream({ ms: 20 }))),
  );
  assert.ok(error instanceof DOMException);
  assert.equal(error.name, "TimeoutError");
});

Deno.test("stall guard errors with the reason of its signal once it aborts", async () => {
  const controller = new AbortController();
  const source = new ReadableStream<string>({ start() {} });
  const read = rejection(
    Array.fromAsync(
      source.pipeThrough(new StallGuardStream({ signal: controller.signal })),
    ),
  );
  const reason = new Error("stopped");
  controller.abort(reason);
  assert.equal(await read, reason);
});
