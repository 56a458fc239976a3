import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { AssistantError } from "../../src/base/errors.ts";
import { ENV_VARS, resolvePaths, socketPath } from "../../src/base/paths.ts";
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

Deno.test("a missing or relative XDG_RUNTIME_DIR is a clear error", () => {
  for (const runtime of [undefined, "", "run/user/1000"]) {
    const vars: Record<string, string> = { HOME: "/home/ada" };
    if (runtime !== undefined) vars.XDG_RUNTIME_DIR = runtime;
    for (const derive of [resolvePaths, socketPath]) {
      assert.throws(
        () => derive(envOf(vars)),
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
