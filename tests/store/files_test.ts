/** The history file on disk: modes enforced, symbolic links refused, a file that is not a database left alone. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { AssistantError } from "../../src/base/errors.ts";
import { SCHEMA_VERSION } from "../../src/store/schema.ts";
import { Store } from "../../src/store/store.ts";
import { clock, mode, turn } from "./fixtures.ts";

Deno.test("store: modes are enforced on every open, data survives reopening, the journal is WAL", () => {
  const root = Deno.makeTempDirSync();
  try {
    const dir = join(root, "nested", "desktop-assistant");
    const path = join(dir, "history.db");
    let id: number;
    {
      using store = new Store(path, { now: clock() });
      id = store.saveTurn(null, turn("remember the milk", "Noted."));
      assert.equal(mode(dir), 0o700);
      assert.equal(mode(path), 0o600);
      assert.equal(mode(`${path}-wal`), 0o600);
      assert.equal(mode(`${path}-shm`), 0o600);
      assert.equal(store.path, path);
    }
    // Loosened by hand (or by a backup tool), then reopened.
    Deno.chmodSync(dir, 0o755);
    Deno.chmodSync(path, 0o644);
    Deno.writeFileSync(`${path}-wal`, new Uint8Array());
    Deno.chmodSync(`${path}-wal`, 0o666);
    {
      using store = new Store(path);
      assert.equal(mode(dir), 0o700);
      assert.equal(mode(path), 0o600);
      assert.equal(mode(`${path}-wal`), 0o600);
      assert.equal(mode(`${path}-shm`), 0o600);
      assert.deepEqual(store.open(id)?.turns, [
        { user: "remember the milk", reply: "Noted.", tools: [] },
      ]);
      assert.deepEqual(store.search("milk").map((h) => h.id), [id]);

      const raw = new DatabaseSync(path, { readOnly: true });
      try {
        assert.equal(
          raw.prepare("PRAGMA journal_mode").get()?.journal_mode,
          "wal",
        );
        assert.equal(
          raw.prepare("PRAGMA user_version").get()?.user_version,
          SCHEMA_VERSION,
        );
      } finally {
        raw.close();
      }
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("store: a symlink at the database path is refused and its target untouched", () => {
  const root = Deno.makeTempDirSync();
  try {
    const target = join(root, "elsewhere.db");
    Deno.writeTextFileSync(target, "not yours");
    Deno.chmodSync(target, 0o644);
    const dir = join(root, "data");
    Deno.mkdirSync(dir);
    const path = join(dir, "history.db");
    Deno.symlinkSync(target, path);

    assert.throws(
      () => new Store(path),
      (e) => e instanceof AssistantError && /symbolic link/.test(e.message),
    );
    assert.equal(Deno.readTextFileSync(target), "not yours");
    assert.equal(mode(target), 0o644);
    assert.equal(Deno.lstatSync(path).isSymlink, true);

    // A dangling link is refused too, and nothing is created at its target.
    const missing = join(root, "missing.db");
    Deno.removeSync(path);
    Deno.symlinkSync(missing, path);
    assert.throws(() => new Store(path), AssistantError);
    assert.throws(() => Deno.lstatSync(missing), Deno.errors.NotFound);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("store: a symlink at the -wal path is refused before SQLite follows it", () => {
  const root = Deno.makeTempDirSync();
  try {
    const target = join(root, "victim");
    Deno.writeTextFileSync(target, "keep me");
    const path = join(root, "history.db");
    Deno.symlinkSync(target, `${path}-wal`);
    assert.throws(
      () => new Store(path),
      (e) => e instanceof AssistantError && e.message.includes("-wal"),
    );
    assert.equal(Deno.readTextFileSync(target), "keep me");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("store: a file that is not a database is refused and left alone", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    Deno.writeTextFileSync(
      path,
      "these are my notes, not a database\n".repeat(200),
    );
    assert.throws(
      () => new Store(path),
      (e) => e instanceof AssistantError && /move it aside/.test(e.message),
    );
    assert.match(Deno.readTextFileSync(path), /^these are my notes/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
