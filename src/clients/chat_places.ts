/**
 * Where chat keeps what outlives it: the lines typed (its input history,
 * under the state directory) and the conversations `/export N file` writes
 * (under the data directory). The launcher grants exactly these, and chat
 * finds them the same way.
 */
import { isAbsolute, join } from "node:path";
import { type Env, resolvePaths } from "../base/paths.ts";
import { holds } from "../base/grant_query.ts";

/** The folders chat writes in; null where the environment does not say. */
export interface ChatPlaces {
  /** Holds the input history file. */
  historyDir: string | null;
  /** Where `/export N file` puts a file named without a folder. */
  exportDir: string | null;
}

/** The input history's file name in its folder. */
export const HISTORY_FILE = "history";

/** The environment variables chat reads: the socket's, where its files go, and where the user started it (`deno task` says so in INIT_CWD). */
export const CHAT_ENV_VARS: readonly string[] = Object.freeze([
  "HOME",
  "INIT_CWD",
  "XDG_DATA_HOME",
  "XDG_RUNTIME_DIR",
  "XDG_STATE_HOME",
]);

/** The environment variables ask reads: the socket's, and what places the files it is given. */
export const ASK_ENV_VARS: readonly string[] = Object.freeze([
  "HOME",
  "INIT_CWD",
  "XDG_RUNTIME_DIR",
]);

/** The process environment as far as this process may read it: a variable without a grant reads as unset, never asked for. */
export const grantedEnv: Env = (name) =>
  holds("env", name) ? Deno.env.get(name) : undefined;

/** Reads a variable, taking one this process may not read as unset. */
export function readable(env: Env, name: string): string | undefined {
  try {
    return env(name);
  } catch {
    return undefined;
  }
}

/** Chat's folders as the environment places them (HOME and the XDG directories, as the daemon finds its own). */
export function chatPlaces(env: Env): ChatPlaces {
  try {
    // Only the data and state folders are wanted: a runtime directory
    // stands in, so none is looked for (that takes a grant of its own).
    const paths = resolvePaths((name) =>
      name === "XDG_RUNTIME_DIR" ? "/" : readable(env, name)
    );
    return {
      historyDir: join(paths.stateDir, "chat"),
      exportDir: join(paths.dataDir, "exports"),
    };
  } catch {
    return { historyDir: null, exportDir: null };
  }
}

/** Where the user started the client: `deno task` runs it elsewhere and says where in INIT_CWD; null for this process's own working directory. */
export function startDir(env: Env): string | null {
  const init = readable(env, "INIT_CWD");
  return init !== undefined && isAbsolute(init) ? init : null;
}

/** The user's home directory, for a path typed as `~/…`; null when unknown. */
export function homeDir(env: Env): string | null {
  const home = readable(env, "HOME");
  return home !== undefined && isAbsolute(home) ? home : null;
}
