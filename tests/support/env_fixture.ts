/** Sample environments for the path, config and permission tests. */
import type { Env } from "../../src/base/paths.ts";

/** An Env over a fixed table of variables; the rest are unset. */
export function envOf(vars: Record<string, string>): Env {
  return (name) => Object.hasOwn(vars, name) ? vars[name] : undefined;
}

/** Every XDG dir set, the config dir with a trailing slash. */
export const XDG: Env = envOf({
  HOME: "/home/ada",
  XDG_RUNTIME_DIR: "/run/user/1000",
  XDG_DATA_HOME: "/srv/data",
  XDG_CONFIG_HOME: "/srv/config/",
  XDG_STATE_HOME: "/srv/state",
});
