/**
 * The import graph of `main.ts` and `src/`: every module's relative imports
 * (static, type-only and dynamic), folded into folders.
 * `deno task layers` prints the folder graph and any cycle.
 */
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root folder. */
export const ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/** Where each folder of `src/` sits: a folder may import only those listed for it. */
export const LAYERS: Readonly<Record<string, readonly string[]>> = {
  base: [],
  streams: ["base"],
  protocol: ["base"],
  llm: ["base", "streams", "protocol"],
  tools: ["base", "streams", "protocol", "llm"],
  store: ["base", "streams", "protocol", "llm"],
  assistant: ["base", "streams", "protocol", "llm", "tools", "store"],
  server: ["base", "streams", "protocol"],
  clients: ["base", "streams", "protocol"],
  web: ["base", "streams", "protocol", "clients"],
  voice: ["base", "streams", "protocol", "clients"],
  launch: [
    "base",
    "streams",
    "protocol",
    "llm",
    "tools",
    "store",
    "assistant",
    "server",
    "clients",
    "web",
    "voice",
  ],
};

const SPECIFIER =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;

/** Each module (a path relative to the root) and the modules it imports. */
export async function moduleGraph(): Promise<Map<string, string[]>> {
  const files = [join(ROOT, "main.ts"), ...await sources(join(ROOT, "src"))];
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = await Deno.readTextFile(file);
    const targets = new Set<string>();
    for (const match of text.matchAll(SPECIFIER)) {
      const target = resolve(dirname(file), match[1]!);
      if (/\.(ts|js)$/.test(target)) targets.add(relative(ROOT, target));
    }
    graph.set(relative(ROOT, file), [...targets].sort());
  }
  return graph;
}

async function sources(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await sources(path));
    else if (/\.ts$/.test(entry.name)) found.push(path);
  }
  return found.sort();
}

/** The folder a module belongs to: `src/<folder>/…`, or the file itself at the top. */
export function folderOf(module: string): string {
  const parts = module.split("/");
  return parts[0] === "src" && parts.length > 2 ? parts[1]! : module;
}

/** Folder to folders it imports, with how many imports each edge has. */
export function folderGraph(
  graph: Map<string, string[]>,
): Map<string, Map<string, number>> {
  const folders = new Map<string, Map<string, number>>();
  for (const [module, targets] of graph) {
    const from = folderOf(module);
    const edges = folders.get(from) ?? new Map<string, number>();
    folders.set(from, edges);
    for (const target of targets) {
      const to = folderOf(target);
      if (to !== from) edges.set(to, (edges.get(to) ?? 0) + 1);
    }
  }
  return folders;
}

/** The cycles of a graph, each as the path that closes it; empty when there are none. */
export function cycles(graph: Map<string, Iterable<string>>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") {
        found.push([...path.slice(path.indexOf(next)), next]);
      } else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) {
    if (!state.has(node)) visit(node);
  }
  return found;
}

if (import.meta.main) {
  const graph = await moduleGraph();
  const folders = folderGraph(graph);
  const lines: string[] = [];
  for (const [from, edges] of [...folders].sort(([a], [b]) => a < b ? -1 : 1)) {
    const shown = [...edges].sort(([a], [b]) => a < b ? -1 : 1)
      .map(([to, count]) => `${to} (${count})`);
    lines.push(`${from} -> ${shown.join(", ") || "nothing"}`);
  }
  const folderCycles = cycles(
    new Map([...folders].map(([from, edges]) => [from, edges.keys()])),
  );
  const moduleCycles = cycles(graph);
  lines.push(
    "",
    `folder cycles: ${folderCycles.length}`,
    ...folderCycles.map((cycle) => "  " + cycle.join(" -> ")),
    `module cycles: ${moduleCycles.length}`,
    ...moduleCycles.map((cycle) => "  " + cycle.join(" -> ")),
  );
  await Deno.stdout.write(new TextEncoder().encode(lines.join("\n") + "\n"));
}
