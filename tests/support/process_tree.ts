/** The processes below one, from /proc (Linux): what a task leaves resident. */

/** Every process's parent, read from /proc/PID/stat. */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      // The name in parentheses may hold spaces; the fields after it do not.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      map.set(Number(entry.name), ppid);
    } catch {
      // Gone since the listing.
    }
  }
  return map;
}

/** The pids below `root`, nearest first. */
export function descendants(root: number): number[] {
  const parentOf = parents();
  const found: number[] = [];
  for (let at = [root]; at.length > 0;) {
    at = [...parentOf].filter(([, ppid]) => at.includes(ppid)).map((
      [pid],
    ) => pid);
    found.push(...at);
  }
  return found;
}

/** A process's command line, word by word. */
export function argvOf(pid: number): string[] {
  return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").slice(0, -1);
}

/** Whether a process runs (a zombie, killed but not yet reaped, does not). */
export function running(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    return false;
  }
}
