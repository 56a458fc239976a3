/**
 * Finding a tool's executable: the absolute path that `--allow-run` must
 * name, through the tool file's dir or PATH, under full or scoped grants.
 */
import { isAbsolute, join, resolve } from "node:path";

/** Used when the process may not read PATH (no `--allow-env=PATH`). */
const FALLBACK_PATH =
  "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The `run` grant of this process for one executable. */
export function canRunExecutable(executable: string): boolean {
  return Deno.permissions.querySync({ name: "run", command: executable })
    .state === "granted";
}

/** The process PATH, or a conventional one when reading it is not granted. */
export function processPath(): string {
  const granted = Deno.permissions.querySync({ name: "env", variable: "PATH" })
    .state === "granted";
  return (granted ? Deno.env.get("PATH") : undefined) ?? FALLBACK_PATH;
}

function canRead(path: string): boolean {
  return Deno.permissions.querySync({ name: "read", path }).state === "granted";
}

function isExecutableFile(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0o755) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/**
 * A candidate is accepted when it can be seen to be an executable file, or,
 * where the process may not read it (scoped grants), when it may run it.
 */
function acceptable(path: string, canRun: (path: string) => boolean): boolean {
  return canRead(path) ? isExecutableFile(path) : canRun(path);
}

/** Resolves command[0]: a path with "/" relative to the TOML file's dir, a bare name through PATH. */
export function resolveExecutable(
  command0: string,
  baseDir: string,
  pathEnv: string,
  canRun: (executable: string) => boolean = canRunExecutable,
): string | null {
  if (command0 === "") return null;
  if (command0.includes("/")) {
    let path = resolve(baseDir, command0);
    if (canRead(path)) {
      try {
        // The grant must name the file that really runs, not a symlink to it.
        path = Deno.realPathSync(path);
      } catch {
        return null;
      }
    }
    return acceptable(path, canRun) ? path : null;
  }
  for (const dir of pathEnv.split(":")) {
    // Empty and relative entries would depend on the daemon's cwd.
    if (!isAbsolute(dir)) continue;
    const path = join(dir, command0);
    if (acceptable(path, canRun)) return path;
  }
  return null;
}
