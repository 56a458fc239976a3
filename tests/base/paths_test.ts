import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { AssistantError } from "../../src/base/errors.ts";
import {
  ENV_VARS,
  resolvePaths,
  runtimeDirIsSet,
  socketPath,
} from "../../src/base/paths.ts";
import { envOf, XDG } from "../support/env_fixture.ts";

const BUNDLED = fileURLToPath(new URL("../../tools", import.meta.url));

Deno.test("resolvePaths follows the XDG variables when they are set", () => {
  assert.deepEqual(resolvePaths(XDG), {
    runtimeDir: "/run/user/1000",
    socketPath: "/run/user/1000/desktop-assistant.sock",
    dataDir: "/srv/data/desktop-assistant",
    dbPath: "/srv/data/desktop-assistant/history.db",
    configDir: "/srv/config/desktop-assistant",
    configFile: "/srv/config/desktop-assistant/config.toml",
    userToolsDir: "/srv/config/desktop-assistant/tools",
    stateDir: "/srv/state/desktop-assistant",
    logFile: "/srv/state/desktop-assistant/assistant.log",
    bundledToolsDir: BUNDLED,
    pidFile: "/run/user/1000/desktop-assistant.pid",
  });
});

Deno.test("resolvePaths falls back to HOME without XDG base dirs", () => {
  const paths = resolvePaths(envOf({
    HOME: "/home/ada/",
    XDG_RUNTIME_DIR: "/run/user/1000",
    // Relative values are invalid by the XDG spec and ignored.
    XDG_DATA_HOME: "relative/data",
    XDG_CONFIG_HOME: "",
  }));
  assert.equal(
    paths.dbPath,
    "/home/ada/.local/share/desktop-assistant/history.db",
  );
  assert.equal(
    paths.configFile,
    "/home/ada/.config/desktop-assistant/config.toml",
  );
  assert.equal(paths.userToolsDir, "/home/ada/.config/desktop-assistant/tools");
  assert.equal(
    paths.logFile,
    "/home/ada/.local/state/desktop-assistant/assistant.log",
  );
  assert.equal(paths.socketPath, "/run/user/1000/desktop-assistant.sock");
});

Deno.test("resolvePaths needs no HOME when every XDG dir is set", () => {
  const read: string[] = [];
  const vars = envOf({
    XDG_RUNTIME_DIR: "/run/user/7",
    XDG_DATA_HOME: "/d",
    XDG_CONFIG_HOME: "/c",
    XDG_STATE_HOME: "/s",
  });
  const paths = resolvePaths((name) => {
    read.push(name);
    return vars(name);
  });
  assert.equal(paths.dbPath, "/d/desktop-assistant/history.db");
  assert.ok(!read.includes("HOME"));
  assert.ok(read.every((name) => ENV_VARS.includes(name)));
});

Deno.test("resolvePaths names HOME when it is needed and missing", () => {
  assert.throws(
    () => resolvePaths(envOf({ XDG_RUNTIME_DIR: "/run/user/1000" })),
    (error) => error instanceof AssistantError && /HOME/.test(error.message),
  );
});

Deno.test("a missing XDG_RUNTIME_DIR without a fit /run/user/<uid>, or a relative one, is a clear error", () => {
  // A root where no per-user directory exists.
  const nowhere = { root: "/nonexistent/run/user", uid: () => 1000 };
  for (const runtime of [undefined, "", "run/user/1000"]) {
    const vars: Record<string, string> = { HOME: "/home/ada" };
    if (runtime !== undefined) vars.XDG_RUNTIME_DIR = runtime;
    for (const derive of [resolvePaths, socketPath]) {
      assert.throws(
        () => derive(envOf(vars), nowhere),
        (error) =>
          error instanceof AssistantError &&
          error.message.includes("XDG_RUNTIME_DIR"),
        `runtime dir ${JSON.stringify(runtime)}`,
      );
    }
  }
});

Deno.test("socketPath reads only XDG_RUNTIME_DIR", () => {
  const read: string[] = [];
  const path = socketPath((name) => {
    read.push(name);
    return name === "XDG_RUNTIME_DIR" ? "/run/user/42/" : undefined;
  });
  assert.equal(path, "/run/user/42/desktop-assistant.sock");
  assert.deepEqual(read, ["XDG_RUNTIME_DIR"]);
});

Deno.test("a socket path too long for a Unix socket is refused", () => {
  const env = envOf({ HOME: "/h", XDG_RUNTIME_DIR: `/tmp/${"r".repeat(90)}` });
  assert.throws(
    () => socketPath(env),
    (error) =>
      error instanceof AssistantError &&
      error.message.includes("XDG_RUNTIME_DIR") &&
      error.message.includes("107"),
  );
});

/** A temporary stand-in for /run/user, removed on dispose. */
async function runUser(): Promise<{ root: string } & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "da-run-user-" });
  return {
    root,
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

Deno.test("without XDG_RUNTIME_DIR, /run/user/<uid> is the runtime dir when it is the user's with mode 0700", async () => {
  await using run = await runUser();
  const uid = Deno.uid()!;
  const dir = `${run.root}/${uid}`;
  await Deno.mkdir(dir);
  await Deno.chmod(dir, 0o700);
  const lookup = { root: run.root, uid: () => uid };
  const paths = resolvePaths(envOf({ HOME: "/home/ada" }), lookup);
  assert.equal(paths.runtimeDir, dir);
  assert.equal(paths.socketPath, `${dir}/desktop-assistant.sock`);
  assert.equal(paths.pidFile, `${dir}/desktop-assistant.pid`);
  assert.equal(
    socketPath(envOf({ XDG_RUNTIME_DIR: "" }), lookup),
    `${dir}/desktop-assistant.sock`,
  );
  assert.equal(runtimeDirIsSet(envOf({ XDG_RUNTIME_DIR: "" })), false);
  assert.equal(runtimeDirIsSet(envOf({ XDG_RUNTIME_DIR: dir })), true);
  // A set variable wins, and nothing is looked up.
  const never = {
    root: run.root,
    uid: (): number => {
      throw new Error("looked up");
    },
  };
  assert.equal(
    socketPath(envOf({ XDG_RUNTIME_DIR: "/run/user/42" }), never),
    "/run/user/42/desktop-assistant.sock",
  );
});

Deno.test("a /run/user/<uid> that is missing, not a directory, someone else's or not 0700 is refused in one message naming XDG_RUNTIME_DIR", async () => {
  await using run = await runUser();
  const uid = Deno.uid()!;
  const refused = (lookupUid: number, why: RegExp) =>
    assert.throws(
      () => socketPath(envOf({}), { root: run.root, uid: () => lookupUid }),
      (error) => {
        assert.ok(error instanceof AssistantError, String(error));
        assert.match(error.message, /^XDG_RUNTIME_DIR is not set, and /);
        assert.match(error.message, why);
        assert.match(error.message, /: set XDG_RUNTIME_DIR to /);
        assert.ok(!error.message.includes("\n"), "one line");
        return true;
      },
    );
  const dir = `${run.root}/${uid}`;
  refused(uid, new RegExp(`${dir} does not exist`));

  await Deno.writeTextFile(dir, "");
  refused(uid, new RegExp(`${dir} is not a directory`));
  await Deno.remove(dir);

  const real = `${run.root}/real`;
  await Deno.mkdir(real);
  await Deno.chmod(real, 0o700);
  await Deno.symlink(real, dir);
  refused(uid, new RegExp(`${dir} is not a directory`));
  await Deno.remove(dir);

  await Deno.mkdir(dir);
  await Deno.chmod(dir, 0o755);
  refused(uid, new RegExp(`${dir} has mode 0755, not 0700`));

  // This process's directory, looked up as another user's.
  const other = uid + 1;
  await Deno.mkdir(`${run.root}/${other}`);
  await Deno.chmod(`${run.root}/${other}`, 0o700);
  refused(
    other,
    new RegExp(
      `${run.root}/${other} belongs to uid ${uid}, not to this user \\(uid ${other}\\)`,
    ),
  );
});
