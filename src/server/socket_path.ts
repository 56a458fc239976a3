/** Making way for the daemon's socket: stale sockets, symlinks, live daemons. */
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";

/** Makes way for a new socket at path, or refuses with the reason. */
export async function clearSocketPath(path: string): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    // For the person starting the daemon: the system's own words.
    throw new AssistantError(
      `cannot inspect the socket path ${path}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (info.isSymlink) {
    // Removing the link itself: following it could delete someone's file.
    await Deno.remove(path);
    log.warn("removed a symlink at the socket path", { path });
    return;
  }
  if (!info.isSocket) {
    throw new AssistantError(
      `${path} exists and is not a socket: move it away or set XDG_RUNTIME_DIR elsewhere`,
    );
  }
  let probe: Deno.UnixConn;
  try {
    probe = await Deno.connect({ transport: "unix", path });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    if (!(error instanceof Deno.errors.ConnectionRefused)) {
      throw new AssistantError(
        `cannot check whether a daemon listens on ${path}: ${
          (error as Error).message
        }`,
        { cause: error },
      );
    }
    await removeQuietly(path);
    log.info("replaced a stale socket", { path });
    return;
  }
  probe.close();
  throw new AssistantError(
    `another daemon is already listening on ${path}: stop it first`,
  );
}

/** Removes the socket file; a missing one is fine, any other failure is logged. */
export async function removeQuietly(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      log.warn("cannot remove socket file", {
        path,
        error: describeError(error),
      });
    }
  }
}
