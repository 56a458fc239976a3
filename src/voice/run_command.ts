/**
 * Running one of the voice client's commands (`stt_command`, `tts_command`,
 * `play_command`) on some bytes: input on stdin, output from stdout, ended
 * by an AbortSignal, and every way it can fail told in a sentence that
 * names the config key.
 */
import { AssistantError } from "../base/errors.ts";

/** Bytes of stderr kept for the message of a failed command. */
const STDERR_KEEP = 4096;
/** How long an ended command gets to exit after SIGTERM before SIGKILL. */
const KILL_GRACE_MS = 1000;
/** How long the pipes of an ended command get to close before they are let go. */
const PIPE_GRACE_MS = 200;

/** Options of {@link runCommand}. */
export interface RunOptions {
  /** Ends the command (SIGTERM, then SIGKILL); the call then rejects with the signal's reason. */
  signal: AbortSignal;
  /** Collect stdout (default) or discard it. */
  output?: boolean;
  /** Most bytes of stdout accepted; default 64 MiB. */
  maxOutput?: number;
}

/** What went wrong starting `argv[0]`, as a sentence naming `key`. */
export function spawnError(
  key: string,
  argv: readonly string[],
  error: unknown,
): AssistantError {
  const name = argv[0] ?? "";
  if (error instanceof Deno.errors.NotFound) {
    return new AssistantError(
      `${key}: ${name} is not installed (not found on PATH): install it, or change ${key} in config.toml`,
      { cause: error },
    );
  }
  if (error instanceof Deno.errors.NotCapable) {
    return new AssistantError(
      `${key}: no permission to run ${name}: start the voice client with deno task voice, which grants the commands its config names`,
      { cause: error },
    );
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return new AssistantError(
      `${key}: ${name} is not executable: check its mode, or change ${key} in config.toml`,
      { cause: error },
    );
  }
  return new AssistantError(
    `${key}: cannot start ${name} (${
      error instanceof Error ? error.message : String(error)
    }): check ${key} in config.toml`,
    { cause: error },
  );
}

/** The last non-empty line of a command's stderr, for a message. */
export function lastLine(bytes: Uint8Array): string {
  const text = new TextDecoder().decode(bytes).trim();
  const line = text.split("\n").pop()?.trim() ?? "";
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** Reads a stream to its end (or until `stop` aborts); at most `max` bytes are kept (`tail`: the last ones), the rest counted. */
export async function collect(
  stream: ReadableStream<Uint8Array>,
  max: number,
  tail = false,
  stop?: AbortSignal,
): Promise<{ bytes: Uint8Array; over: boolean }> {
  const parts: Uint8Array[] = [];
  let size = 0;
  let over = false;
  const reader = stream.getReader();
  const cancel = () => reader.cancel().catch(() => {});
  stop?.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.length;
      if (size <= max) continue;
      over = true;
      if (!tail) {
        await cancel();
        break;
      }
      while (size > max && parts.length > 1) size -= parts.shift()!.length;
    }
  } catch {
    // Cancelled, or the pipe broke: what arrived is what there is.
  } finally {
    stop?.removeEventListener("abort", cancel);
    reader.releaseLock();
  }
  const bytes = new Uint8Array(Math.min(size, tail ? size : max));
  let at = 0;
  for (const part of parts) {
    if (at >= bytes.length) break;
    const piece = part.subarray(0, bytes.length - at);
    bytes.set(piece, at);
    at += piece.length;
  }
  return { bytes, over };
}

/** Runs `argv` with `input` on stdin; resolves to its stdout once it exits 0. AssistantError naming `key` on any failure. */
export async function runCommand(
  key: string,
  argv: readonly string[],
  input: Uint8Array,
  options: RunOptions,
): Promise<Uint8Array> {
  const { signal } = options;
  signal.throwIfAborted();
  const [name = "", ...args] = argv;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(name, {
      args,
      stdin: "piped",
      stdout: options.output === false ? "null" : "piped",
      stderr: "piped",
      signal,
    }).spawn();
  } catch (error) {
    throw spawnError(key, argv, error);
  }
  // A command that ignores SIGTERM is killed outright.
  let grace: ReturnType<typeof setTimeout> | undefined;
  const kill = () => {
    grace = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // It has exited.
      }
    }, KILL_GRACE_MS);
  };
  signal.addEventListener("abort", kill, { once: true });
  try {
    const writing = (async () => {
      const writer = child.stdin.getWriter();
      try {
        await writer.write(input);
        await writer.close();
      } catch {
        // It exited without reading everything: its status says why.
      }
    })();
    // Once it is ended, a child it left behind may hold the pipes open:
    // they are given a moment to close, then let go.
    const letGo = new AbortController();
    const stdout = options.output === false
      ? Promise.resolve({ bytes: new Uint8Array(), over: false })
      : collect(
        child.stdout,
        options.maxOutput ?? 64 * 1024 * 1024,
        false,
        letGo.signal,
      );
    const stderr = collect(child.stderr, STDERR_KEEP, true, letGo.signal);
    const status = await child.status;
    if (signal.aborted) {
      const pipes = Promise.all([stdout, stderr]);
      const timer = setTimeout(() => letGo.abort(), PIPE_GRACE_MS);
      await pipes;
      clearTimeout(timer);
      signal.throwIfAborted();
    }
    const [out, err] = await Promise.all([stdout, stderr, writing]);
    if (!status.success) {
      const how = status.signal !== null
        ? `was ended by ${status.signal}`
        : `exited with ${status.code}`;
      const said = lastLine(err.bytes);
      throw new AssistantError(
        `${key}: ${name} ${how}${said === "" ? "" : `: ${said}`}`,
      );
    }
    if (out.over) {
      throw new AssistantError(
        `${key}: ${name} wrote more than ${
          options.maxOutput ?? 64 * 1024 * 1024
        } bytes: check ${key} in config.toml`,
      );
    }
    return out.bytes;
  } finally {
    signal.removeEventListener("abort", kill);
    clearTimeout(grace);
  }
}
