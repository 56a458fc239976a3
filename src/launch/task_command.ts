/**
 * The whole command line a `deno task` runs, printed by a launcher that the
 * task substitutes (`"start": "$(deno run … main.ts flags --task)"`): `deno
 * task` splits the output at whitespace and runs it, so nothing stays
 * resident beside the process it starts.
 *
 * Without XDG_RUNTIME_DIR the launcher finds /run/user/<uid> (paths.ts), and
 * the line begins `env XDG_RUNTIME_DIR=<that dir>`: the started process reads
 * the same directory without the grants that looking for it takes. When the
 * launcher fails it prints the reason on stderr and the one word `false` (a
 * `deno task` built-in), so the task ends with status 1, starts nothing, and
 * that reason is the only message.
 */
import { fileURLToPath } from "node:url";
import { configReport } from "../base/config.ts";
import { AssistantError } from "../base/errors.ts";
import { type Env, readEnv, runtimeDirIsSet } from "../base/paths.ts";
import { writeAll } from "../streams/write_all.ts";

/** deno.lock beside main.ts: the packages of the daemon and its clients, pinned with their checksums. */
export const LOCK_FILE: string = fileURLToPath(
  new URL("../../deno.lock", import.meta.url),
);

/**
 * The flags every deno run or compile of the daemon or a client starts
 * with: deno.lock, and a refusal of any package it does not pin. deno.json
 * turns the lock off, since `deno task` installs every package of the lock
 * it names before any task, and the tests' packages are not the daemon's.
 */
export const LOCKED: readonly string[] = Object.freeze([
  `--lock=${LOCK_FILE}`,
  "--frozen",
]);

/** What a failed launcher gives the task to run: a built-in that exits 1, whatever arguments follow. */
export const TASK_FAILED = "false";

/**
 * Refuses a word that `deno task`'s word splitting would cut, naming the
 * task and, in `instead`, another way to start it.
 */
export function taskWords(
  words: string[],
  task: string,
  instead: string,
): string[] {
  const cut = words.find((word) => /\s/.test(word));
  if (cut !== undefined) {
    throw new AssistantError(
      `The argument ${
        JSON.stringify(cut.slice(0, 200))
      } contains whitespace, which deno task ${task} cannot pass as one word: ${instead}, or move the path`,
    );
  }
  return words;
}

/** The command line `[env XDG_RUNTIME_DIR=<runtimeDir>] <this deno> <args…>`. */
export function taskCommand(
  args: string[],
  runtimeDir: string,
  env: Env = readEnv,
): string[] {
  const handOver = runtimeDirIsSet(env)
    ? []
    : ["env", `XDG_RUNTIME_DIR=${runtimeDir}`];
  return [...handOver, Deno.execPath(), ...args];
}

/** What a launcher that cannot derive its flags prints on stderr: every problem of a refused config (then its warnings), or a known error's message; null for an error no message was written for. */
export function failureText(error: unknown): string | null {
  const report = configReport(error);
  if (report !== null) {
    return [
      ...report.problems,
      ...report.warnings.map((warning) => `warning: ${warning}`),
    ].map((line) => `${line}\n`).join("");
  }
  const known = error instanceof AssistantError ||
    error instanceof SyntaxError || error instanceof TypeError;
  return known ? `${error.message}\n` : null;
}

/** What {@link printTaskCommand} prints: the line, and the words that say how else to start it. */
export interface TaskLine {
  /** The task's name, for the message about whitespace. */
  task: string;
  /** Another way to start it, e.g. "start the daemon with assistant.sh start". */
  instead: string;
  /** The command line (from {@link taskCommand}). */
  words: () => string[] | Promise<string[]>;
}

/** Prints the line one word per line, or on failure the reason on stderr and {@link TASK_FAILED}; resolves to the exit code. */
export async function printTaskCommand(line: TaskLine): Promise<number> {
  let words: string[];
  try {
    words = taskWords(await line.words(), line.task, line.instead);
  } catch (error) {
    await writeAll(Deno.stdout, `${TASK_FAILED}\n`);
    const reason = failureText(error);
    if (reason === null) throw error;
    await writeAll(Deno.stderr, reason);
    return 1;
  }
  await writeAll(Deno.stdout, words.map((word) => `${word}\n`).join(""));
  return 0;
}
