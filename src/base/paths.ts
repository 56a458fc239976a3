/**
 * Every path the daemon and its clients use, derived from the environment
 * at start, so a test can move all of them into a temporary directory.
 */

import { isAbsolute, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { AssistantError } from "./errors.ts";

/** Every file and directory the daemon and its scripts use. */
export interface Paths {
  runtimeDir: string;
  socketPath: string;
  dataDir: string;
  dbPath: string;
  configDir: string;
  configFile: string;
  userToolsDir: string;
  stateDir: string;
  logFile: string;
  bundledToolsDir: string;
  pidFile: string;
}

/**
 * The environment variables the daemon reads (for --allow-env): HOME and the
 * XDG base directories locate every path; PATH resolves tool executables.
 */
export const ENV_VARS: readonly string[] = Object.freeze([
  "HOME",
  "PATH",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_RUNTIME_DIR",
  "XDG_STATE_HOME",
]);

/** Reads one environment variable; injected so tests need no real environment. */
export type Env = (name: string) => string | undefined;

const APP = "desktop-assistant";

/** Longest Unix socket path Linux accepts, in bytes (sun_path less its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

/** The process environment, as an Env. */
export const readEnv: Env = (name) => Deno.env.get(name);

/** Normalises an absolute path without touching the file system or cwd. */
export function clean(path: string): string {
  const normal = normalize(path);
  return normal.length > 1 && normal.endsWith("/")
    ? normal.slice(0, -1)
    : normal;
}

/** Where and as whom the runtime directory is looked for when XDG_RUNTIME_DIR is unset; injected by tests. */
export interface RuntimeDirLookup {
  /** The parent of the per-user runtime directories; default /run/user. */
  root?: string;
  /** The process's user id; default Deno.uid() (which needs --allow-sys=uid). */
  uid?: () => number | null;
}

const RUN_USER = "/run/user";

const SET_IT =
  "set XDG_RUNTIME_DIR to your per-user runtime directory (a directory of yours with mode 0700; a login session gets /run/user/<uid>)";

/** What is wrong with `dir` as the user's runtime directory, or null when it is one: a directory (not a link), theirs, mode 0700. */
function unfitRuntimeDir(dir: string, uid: number): string | null {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(dir);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return `${dir} does not exist`;
    if (error instanceof Deno.errors.NotCapable) {
      return `this process may not look at ${dir} (it needs --allow-read=${dir})`;
    }
    return `${dir} cannot be examined (${(error as Error).name})`;
  }
  if (!info.isDirectory) return `${dir} is not a directory`;
  if (info.uid !== uid) {
    return `${dir} belongs to uid ${info.uid}, not to this user (uid ${uid})`;
  }
  const mode = (info.mode ?? 0) & 0o777;
  if (mode !== 0o700) {
    return `${dir} has mode ${mode.toString(8).padStart(4, "0")}, not 0700`;
  }
  return null;
}

/** `/run/user/<uid>` when it is fit, else one error naming XDG_RUNTIME_DIR and what was wrong. */
function fallbackRuntimeDir(lookup: RuntimeDirLookup): string {
  const root = lookup.root ?? RUN_USER;
  let uid: number | null;
  try {
    uid = (lookup.uid ?? Deno.uid)();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotCapable)) throw error;
    throw new AssistantError(
      `XDG_RUNTIME_DIR is not set, and this process may not look for ${root}/<uid> (it needs --allow-sys=uid): ${SET_IT}`,
    );
  }
  const problem = uid === null
    ? "this system has no user ids"
    : unfitRuntimeDir(join(root, String(uid)), uid);
  if (problem !== null) {
    throw new AssistantError(
      `XDG_RUNTIME_DIR is not set, and ${problem}: ${SET_IT}`,
    );
  }
  return join(root, String(uid));
}

function runtimeDirFrom(env: Env, lookup: RuntimeDirLookup): string {
  const value = env("XDG_RUNTIME_DIR");
  if (value === undefined || value === "") return fallbackRuntimeDir(lookup);
  if (!isAbsolute(value)) {
    throw new AssistantError(
      `XDG_RUNTIME_DIR is ${
        JSON.stringify(value)
      }, not an absolute path: set it to your per-user runtime directory (usually /run/user/$(id -u))`,
    );
  }
  return clean(value);
}

/** Whether XDG_RUNTIME_DIR is set, so a process started with the same environment finds the same runtime directory without looking for it. */
export function runtimeDirIsSet(env: Env = readEnv): boolean {
  const value = env("XDG_RUNTIME_DIR");
  return value !== undefined && value !== "";
}

function socketIn(runtimeDir: string): string {
  const path = join(runtimeDir, `${APP}.sock`);
  const bytes = new TextEncoder().encode(path).length;
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new AssistantError(
      `The socket path ${path} is ${bytes} bytes, longer than the ${MAX_SOCKET_PATH_BYTES} a Unix socket allows: point XDG_RUNTIME_DIR at a shorter directory`,
    );
  }
  return path;
}

/** Only the socket location, for clients (no HOME needed beyond that). */
export function socketPath(
  env: Env = readEnv,
  lookup: RuntimeDirLookup = {},
): string {
  return socketIn(runtimeDirFrom(env, lookup));
}

/**
 * Derives every path. Without XDG_RUNTIME_DIR the runtime directory is
 * /run/user/<uid> when that is the user's with mode 0700; otherwise, or when
 * XDG_RUNTIME_DIR is relative, an AssistantError names the variable.
 */
export function resolvePaths(
  env: Env = readEnv,
  lookup: RuntimeDirLookup = {},
): Paths {
  const runtimeDir = runtimeDirFrom(env, lookup);
  let home: string | undefined;
  const homeDir = (): string => {
    if (home !== undefined) return home;
    const value = env("HOME");
    if (value === undefined || !isAbsolute(value)) {
      throw new AssistantError(
        `HOME is ${
          value === undefined ? "not set" : JSON.stringify(value)
        }: set it to your home directory, or set XDG_DATA_HOME, XDG_CONFIG_HOME and XDG_STATE_HOME`,
      );
    }
    return home = clean(value);
  };
  // The XDG spec says relative values are invalid and must be ignored.
  const base = (name: string, fallback: string): string => {
    const value = env(name);
    return value !== undefined && isAbsolute(value)
      ? clean(value)
      : join(homeDir(), fallback);
  };
  const dataDir = join(base("XDG_DATA_HOME", ".local/share"), APP);
  const configDir = join(base("XDG_CONFIG_HOME", ".config"), APP);
  const stateDir = join(base("XDG_STATE_HOME", ".local/state"), APP);
  return {
    runtimeDir,
    socketPath: socketIn(runtimeDir),
    dataDir,
    dbPath: join(dataDir, "history.db"),
    configDir,
    configFile: join(configDir, "config.toml"),
    userToolsDir: join(configDir, "tools"),
    stateDir,
    logFile: join(stateDir, "assistant.log"),
    bundledToolsDir: clean(
      fileURLToPath(new URL("../../tools", import.meta.url)),
    ),
    pidFile: join(runtimeDir, `${APP}.pid`),
  };
}
