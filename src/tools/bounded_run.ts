/**
 * One program run under bounds: no shell, its own process group, given bytes
 * on stdin, stdout kept up to a limit and the tail of stderr, and a time
 * limit after which it is killed (through coreutils `timeout` when given, so
 * its whole group goes; see runner.ts for why). Tools and document
 * converters run through here.
 */
import { HeadCollector, TailCollector } from "./bounded_output.ts";

/** Bytes of stderr kept for a failed run's report. */
export const STDERR_TAIL = 2048;
/** After the program is gone, how long a pipe held by an escaped process is still read. */
const DRAIN_GRACE_MS = 1000;
/** After asking for the kill, how long before the process Deno started is killed directly. */
const KILL_GRACE_MS = 2000;
/** setTimeout's ceiling: a longer delay would fire at once. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** What to run and its bounds. */
export interface BoundedRunOptions {
  /** The resolved path of the program. */
  executable: string;
  args: string[];
  cwd: string;
  stdin: Uint8Array;
  /** Seconds before it is killed. */
  seconds: number;
  /** Bytes of stdout kept. */
  outputLimit: number;
  /** Ends the run (as `stopped`). */
  signal?: AbortSignal;
  /** Path of coreutils `timeout` to kill the whole process group; null runs the program directly. */
  helper: string | null;
}

/** How a bounded run ended, and what it wrote. */
export interface BoundedRun {
  status: Deno.CommandStatus;
  /** Why it was killed, when it was. */
  reason: "timeout" | "stopped" | null;
  stdout: HeadCollector;
  stderr: TailCollector;
}

async function writeStdin(
  stdin: WritableStream<Uint8Array>,
  bytes: Uint8Array,
): Promise<void> {
  const writer = stdin.getWriter();
  try {
    await writer.write(bytes);
    await writer.close();
  } catch {
    // The program exited without reading its stdin: that is its right.
  }
}

/** Runs a program within its bounds; rejects only when it cannot be started. */
export async function boundedRun(
  options: BoundedRunOptions,
): Promise<BoundedRun> {
  const { seconds, helper } = options;
  const [program, programArgs] = helper === null
    ? [options.executable, options.args]
    : [helper, [
      "-s",
      "KILL",
      // A zero duration would switch the helper's deadline off.
      String(Math.max(seconds, 0.001)),
      options.executable,
      ...options.args,
    ]];
  const child = new Deno.Command(program, {
    args: programArgs,
    cwd: options.cwd,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    // Its own process group: a terminal's Ctrl-C reaches the daemon, which
    // then ends the program itself.
    detached: true,
  }).spawn();

  const stdout = new HeadCollector(
    Math.max(0, Math.floor(options.outputLimit)),
  );
  const stderr = new TailCollector(STDERR_TAIL);
  const drain = new AbortController();
  const piped = Promise.all([
    child.stdout.pipeTo(stdout.writable, { signal: drain.signal }).catch(
      () => {},
    ),
    child.stderr.pipeTo(stderr.writable, { signal: drain.signal }).catch(
      () => {},
    ),
  ]);
  const stdinDone = writeStdin(child.stdin, options.stdin);

  let reason: "timeout" | "stopped" | null = null;
  let escalation: ReturnType<typeof setTimeout> | undefined;
  const kill = (signal: Deno.Signal) => {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  };
  const stop = (why: "timeout" | "stopped") => {
    if (reason !== null) return;
    reason = why;
    // SIGALRM is the helper's own deadline: it kills the whole group.
    kill(helper === null ? "SIGKILL" : "SIGALRM");
    escalation = setTimeout(() => kill("SIGKILL"), KILL_GRACE_MS);
  };
  const deadline = setTimeout(
    () => stop("timeout"),
    Math.min(seconds * 1000, MAX_DELAY_MS),
  );
  const onAbort = () => stop("stopped");
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();

  let status: Deno.CommandStatus;
  try {
    status = await child.status;
  } finally {
    clearTimeout(deadline);
    clearTimeout(escalation);
    options.signal?.removeEventListener("abort", onAbort);
  }
  const drainTimer = setTimeout(() => drain.abort(), DRAIN_GRACE_MS);
  const drained = new Promise<void>((done) => {
    if (drain.signal.aborted) done();
    drain.signal.addEventListener("abort", () => done(), { once: true });
  });
  // A write to stdin cannot be cancelled: one stuck on a pipe that a process
  // left behind holds but never reads is left to fail when that process
  // ends, rather than holding the caller.
  await Promise.race([Promise.all([piped, stdinDone]), drained]);
  clearTimeout(drainTimer);
  drain.abort();
  return { status, reason, stdout, stderr };
}
