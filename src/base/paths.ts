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

function runtimeDirFrom(env: Env): string {
  const value = env("XDG_RUNTIME_DIR");
  if (value === undefined || value === "") {
    throw new AssistantError(
      "XDG_RUNTIME_DIR is not set: set it to your per-user runtime directory (usually /run/user/$(id -u)) before starting",
    );
  }
  if (!isAbsolute(value)) {
    throw new AssistantError(
      `XDG_RUNTIME_DIR is ${
        JSON.stringify(value)
      }, not an absolute path: set it to your per-user runtime directory (usually /run/user/$(id -u))`,
    );
  }
  return clean(value);
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
export function socketPath(env: Env = readEnv): string {
  return socketIn(runtimeDirFrom(env));
}

/** Derives every path; throws AssistantError naming XDG_RUNTIME_DIR when it is missing or not absolute. */
export function resolvePaths(env: Env = readEnv): Paths {
  const runtimeDir = runtimeDirFrom(env);
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
