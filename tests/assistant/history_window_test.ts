/** Where a reply's history window starts: sliding, or moving in blocks. */
import assert from "node:assert/strict";
import {
  blockStart,
  coveredStart,
} from "../../src/assistant/history_window.ts";

/** The start of each of `turns` asks in one conversation, each window moving from the one before. */
function starts(
  turns: number,
  cost: (index: number) => number,
  room: number,
  limit: number,
  blocks: boolean,
): number[] {
  const out: number[] = [];
  let previous: number | null = null;
  for (let count = 0; count < turns; count++) {
    const start = blockStart(count, cost, room, limit, previous);
    out.push(start);
    if (blocks) previous = start;
  }
  return out;
}

Deno.test("sliding, the oldest turn leaves with every ask once the window is full", () => {
  const got = starts(14, () => 10, Infinity, 10, false);
  assert.deepEqual(got, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]);
});

Deno.test("in blocks the start holds until turns must leave, then half the window leaves at once", () => {
  const got = starts(30, () => 10, Infinity, 10, true);
  // Every window holds at most ten turns; a move keeps the newest five.
  for (const [count, start] of got.entries()) {
    assert.ok(count - start <= 10, `ask ${count} carries ${count - start}`);
  }
  const moves = got.flatMap((start, i) =>
    i > 0 && start !== got[i - 1] ? [i] : []
  );
  assert.deepEqual(moves, [11, 17, 23, 29]);
  for (const at of moves) assert.equal(at - got[at]!, 5);
  // Between moves the request begins the same way: the start is unchanged.
  assert.equal(new Set(got.slice(11, 17)).size, 1);
});

Deno.test("in blocks a window bound by the room keeps the newest half of the room when it moves", () => {
  const got = starts(20, () => 100, 1000, 100, true);
  for (const [count, start] of got.entries()) {
    assert.ok((count - start) * 100 <= 1000);
  }
  const moves = got.flatMap((start, i) =>
    i > 0 && start !== got[i - 1] ? [i] : []
  );
  assert.ok(moves.length >= 2, `moves at ${moves}`);
  for (const at of moves) assert.ok((at - got[at]!) * 100 <= 500);
});

Deno.test("a window of one or two turns moves a turn at a time in blocks too", () => {
  assert.deepEqual(starts(5, () => 1, Infinity, 2, true), [0, 0, 0, 1, 2]);
});

Deno.test("a start from a longer history than there is now (a retry) is capped at the turns there are", () => {
  assert.equal(blockStart(3, () => 1, Infinity, 10, 4), 3);
});

Deno.test("beside a summary the window never carries a turn it covers, and holds uncovered turns while the summary is due", () => {
  const cost = () => 10;
  // The summary covers the first six of sixteen turns: the window starts there.
  assert.equal(
    coveredStart(16, cost, Infinity, 10, 0, {
      summarized: 6,
      hold: true,
      failedAt: null,
    }),
    6,
  );
  // Eleven turns, a move due and no summary yet: the window holds at its
  // start, past the turn limit, while the turns fit the room...
  assert.equal(
    coveredStart(11, cost, Infinity, 10, 0, {
      summarized: 0,
      hold: true,
      failedAt: null,
    }),
    0,
  );
  // ...but never past the room.
  assert.equal(
    coveredStart(11, cost, 80, 10, 0, {
      summarized: 0,
      hold: true,
      failedAt: null,
    }),
    3,
  );
  // Once the summary of this move failed, the window moves without it.
  assert.equal(
    coveredStart(11, cost, Infinity, 10, 0, {
      summarized: 0,
      hold: false,
      failedAt: null,
    }),
    6,
  );
  // ...or once it failed for this very move.
  assert.equal(
    coveredStart(11, cost, Infinity, 10, 0, {
      summarized: 0,
      hold: true,
      failedAt: 6,
    }),
    6,
  );
  // A window new in this run (no previous start) moves at once: no cache to keep.
  assert.equal(
    coveredStart(11, cost, Infinity, 10, null, {
      summarized: 0,
      hold: true,
      failedAt: null,
    }),
    1,
  );
});
