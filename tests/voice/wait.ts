/**
 * Waiting in the voice tests without sleeps: for a promise (with a guard
 * against a hang that names what never happened), for a printed line, or
 * for a file's text, watched through the file system's events.
 */
import { dirname } from "node:path";

/** How long a test waits for something before it fails saying what: a guard against a hang, not a timing assertion. */
const GIVE_UP_MS = 20_000;

/** Rejects after the guard time, naming what never happened. */
function giveUp(what: string): { promise: Promise<never>; clear: () => void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Gave up waiting for ${what}`)),
      GIVE_UP_MS,
    );
  });
  return { promise, clear: () => clearTimeout(timer) };
}

/** Awaits `promise`, failing with `what` if it never settles. */
export async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  const guard = giveUp(what);
  try {
    return await Promise.race([promise, guard.promise]);
  } finally {
    guard.clear();
  }
}

/** Lines a client printed, with a way to wait for one. */
export class Lines {
  readonly all: string[] = [];
  #waiters: (() => void)[] = [];

  /** Records one line (pass as `say` or `warn`). */
  push = (line: string): void => {
    this.all.push(line);
    for (const wake of this.#waiters.splice(0)) wake();
  };

  /** The `count`-th line so far that matches, waiting for it if need be. */
  async find(
    match: (line: string) => boolean,
    what: string,
    count = 1,
  ): Promise<string> {
    const look = () => this.all.filter(match)[count - 1];
    return await within(
      (async () => {
        for (let found = look();; found = look()) {
          if (found !== undefined) return found;
          const { promise, resolve } = Promise.withResolvers<void>();
          this.#waiters.push(resolve);
          await promise;
        }
      })(),
      what,
    );
  }

  /** Waits for a line containing `text`. */
  has(text: string, count = 1): Promise<string> {
    return this.find(
      (line) => line.includes(text),
      JSON.stringify(text),
      count,
    );
  }
}

/** Resolves to `find`'s answer on the file's text once it has one; watches the file's folder, no polling. */
export async function waitForFile<T>(
  path: string,
  find: (text: string) => T | undefined,
  what: string,
): Promise<T> {
  const watcher = Deno.watchFs(dirname(path));
  const guard = giveUp(what);
  const check = async (): Promise<T | undefined> => {
    try {
      return find(await Deno.readTextFile(path));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
  };
  try {
    const found = await check();
    if (found !== undefined) return found;
    const changes = (async () => {
      for await (const _ of watcher) {
        const found = await check();
        if (found !== undefined) return found;
      }
      throw new Error(`Stopped watching before ${what}`);
    })();
    return await Promise.race([changes, guard.promise]);
  } finally {
    guard.clear();
    watcher.close();
  }
}
