/**
 * The README and docs/ as a reader follows them: every relative link and
 * anchor leads somewhere, every path they cite exists, the README's config
 * table is the schema's, and docs/protocol.md names every command, event,
 * `hello` field and error code the code has.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { dirname, join, normalize } from "node:path";
import { configKeys } from "../src/base/config_schema.ts";
import {
  COMMAND_ERROR_CODES,
  TURN_ERROR_CODES,
} from "../src/base/error_codes.ts";
import { resolvePaths } from "../src/base/paths.ts";
import { parseCommand } from "../src/protocol/commands.ts";
import { XDG } from "./support/env_fixture.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** What the checks read: a file's text, or whether a path exists (null: it does not). */
interface Files {
  text(path: string): string | null;
  exists(path: string): boolean;
  /** The names in a directory, for a path with a `*`. */
  names(dir: string): string[];
}

const disk: Files = {
  text: (path) => {
    try {
      return Deno.readTextFileSync(join(ROOT, path));
    } catch {
      return null;
    }
  },
  exists: (path) => {
    try {
      Deno.statSync(join(ROOT, path));
      return true;
    } catch {
      return false;
    }
  },
  names: (dir) => {
    try {
      return [...Deno.readDirSync(join(ROOT, dir))].map((entry) => entry.name);
    } catch {
      return [];
    }
  },
};

/** The documents a reader follows: the README and every page of docs/. */
function documents(): string[] {
  const pages = disk.names("docs").filter((name) => name.endsWith(".md"));
  return ["README.md", ...pages.sort().map((name) => `docs/${name}`)];
}

/** The text outside fenced code blocks, where a `[x](y)` or a `#` line means what it says. */
function outsideFences(markdown: string): string {
  let fenced = false;
  return markdown.split("\n").map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return "";
    }
    return fenced ? "" : line;
  }).join("\n");
}

/** The code spans of the prose, each without its backticks. */
function codeSpans(markdown: string): string[] {
  const spans: string[] = [];
  for (const match of outsideFences(markdown).matchAll(/(`+)([\s\S]*?)\1/g)) {
    spans.push(match[2]!.trim());
  }
  return spans;
}

/** Every link target of the prose: inline links, images and reference definitions. */
export function linkTargets(markdown: string): string[] {
  const prose = outsideFences(markdown).replace(/(`+)[\s\S]*?\1/g, "");
  const targets: string[] = [];
  for (
    const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)
  ) {
    targets.push(match[1]!);
  }
  for (const match of prose.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)) {
    targets.push(match[1]!);
  }
  return targets;
}

/** The anchors GitHub gives a document's headings (a repeated one gets `-1`, `-2`, …). */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (
    const match of outsideFences(markdown).matchAll(
      /^#{1,6}\s+(.+?)\s*#*\s*$/gm,
    )
  ) {
    // Links count by their text; code and emphasis marks are not text.
    const text = match[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/[`*]/g, "");
    const base = text.toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** What is wrong with each relative link of `file`: a missing file, or a missing anchor. */
export function brokenLinks(file: string, files: Files): string[] {
  const markdown = files.text(file);
  if (markdown === null) return [`${file} cannot be read`];
  const wrong: string[] = [];
  for (const target of linkTargets(markdown)) {
    // A URL with a scheme (https:, mailto:) is not the repository's.
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = "", anchor] = target.split("#", 2);
    const resolved = path === "" ? file : normalize(join(dirname(file), path));
    if (resolved.startsWith("..") || !files.exists(resolved)) {
      wrong.push(`${file}: ${target} (no file ${resolved})`);
      continue;
    }
    if (anchor === undefined || !resolved.endsWith(".md")) continue;
    const text = files.text(resolved) ?? "";
    if (!anchors(text).has(decodeURIComponent(anchor))) {
      wrong.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
    }
  }
  return wrong;
}

/** The code spans of `file` that name a repository path (`src/base/config.ts`, `tests/bench/`, `web/*.js`) none of the root, `src/` or `tests/` holds. */
export function missingPaths(file: string, files: Files): string[] {
  const markdown = files.text(file) ?? "";
  const wrong: string[] = [];
  for (const span of codeSpans(markdown)) {
    // A relative path with a folder, and a file extension or a trailing slash.
    if (!/^\.?[\w-]+(\/[\w.*-]+)*(\.\w+|\/)$/.test(span)) continue;
    if (!span.includes("/")) continue;
    const found = ["", "src/", "tests/"].some((base) =>
      span.includes("*")
        ? globExists(base + span, files)
        : files.exists(base + span)
    );
    if (!found) wrong.push(`${file}: \`${span}\``);
  }
  return wrong;
}

function globExists(pattern: string, files: Files): boolean {
  const dir = dirname(pattern);
  const name = pattern.slice(dir.length + 1);
  const regex = new RegExp(
    `^${name.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`,
  );
  return files.names(dir).some((entry) => regex.test(entry));
}

/** The text of the section under the first heading that is exactly `title`, up to the next heading of its level or above. */
function section(markdown: string, title: string): string {
  const lines = outsideFences(markdown).split("\n");
  const start = lines.findIndex((line) =>
    /^#+ /.test(line) && line.replace(/^#+ /, "") === title
  );
  assert.notEqual(start, -1, `no heading "${title}"`);
  const level = lines[start]!.indexOf(" ");
  const end = lines.findIndex((line, i) =>
    i > start && /^#+ /.test(line) && line.indexOf(" ") <= level
  );
  return lines.slice(start + 1, end === -1 ? undefined : end).join("\n");
}

/** Each Markdown table of `text` as its rows of cells (header and rule left out). */
function tables(text: string): string[][][] {
  const found: string[][][] = [];
  let rows: string[][] | null = null;
  for (const line of text.split("\n")) {
    if (!line.startsWith("|")) {
      rows = null;
      continue;
    }
    const cells = line.slice(1, line.lastIndexOf("|")).split("|").map((cell) =>
      cell.trim()
    );
    if (rows === null) {
      rows = [];
      found.push(rows);
    } else if (!/^-+$/.test(cells[0]!)) {
      rows.push(cells);
    }
  }
  return found;
}

/** The name a table row's first cell gives: `ask {text}` is `ask`, `[mcp.NAME]` is `mcp`. */
function firstName(row: string[]): string {
  const match = /^`\[?([\w-]+)/.exec(row[0] ?? "");
  return match?.[1] ?? "";
}

/** The `type` names of a union of object types in `source`, from `start` to the blank line that ends it. */
function typeNames(source: string, start: string): string[] {
  const from = source.indexOf(start);
  assert.notEqual(from, -1, `no ${start}`);
  const block = source.slice(from, source.indexOf(";\n\n", from));
  const names = [...block.matchAll(/type: "(\w+)"/g)].map((m) => m[1]!);
  // A member named by its interface (`| ErrorEvent`) has its type there.
  for (const [, member] of block.matchAll(/\|\s+([A-Z]\w*)\s*$/gm)) {
    const declared = new RegExp(
      `interface ${member} \\{[^}]*?type: "(\\w+)"`,
    ).exec(source);
    assert.ok(declared, `no interface ${member} with a type`);
    names.push(declared[1]!);
  }
  return [...new Set(names)];
}

Deno.test("every relative link of the README and docs/ leads to a file, and every anchor to a heading", () => {
  const files = documents();
  assert.ok(files.includes("docs/protocol.md"));
  assert.deepEqual(files.flatMap((file) => brokenLinks(file, disk)), []);
});

Deno.test("the link check finds a missing file, a missing anchor and a link out of the repository, and leaves code alone", () => {
  const tree: Record<string, string> = {
    "README.md": [
      "# Guide",
      "## Quick start",
      "See [the start](#quick-start), [a page](docs/a.md#its-part),",
      "[a gone page](docs/gone.md), [no part](docs/a.md#nowhere),",
      "[no such heading](#quick), [outside](../elsewhere.md),",
      "![a picture](docs/images/x.png) and [a site](https://example.com).",
      "`[code](nowhere.md)`",
      "```",
      "[fenced](nowhere.md)",
      "```",
    ].join("\n"),
    "docs/a.md":
      "# A\n\n## Its part\n\nBack to [the guide](../README.md#guide).",
    "docs/images/x.png": "",
  };
  const files: Files = {
    text: (path) => tree[path] ?? null,
    exists: (path) => Object.hasOwn(tree, path),
    names: () => [],
  };
  assert.deepEqual(brokenLinks("README.md", files), [
    "README.md: docs/gone.md (no file docs/gone.md)",
    "README.md: docs/a.md#nowhere (no heading #nowhere in docs/a.md)",
    "README.md: #quick (no heading #quick in README.md)",
    "README.md: ../elsewhere.md (no file ../elsewhere.md)",
  ]);
  assert.deepEqual(brokenLinks("docs/a.md", files), []);
});

Deno.test("headings get GitHub's anchors: lower case, no punctuation or code marks, spaces as dashes, repeats numbered", () => {
  assert.deepEqual(
    [
      ...anchors(
        "# The `hello` event\n## Every key, with its limits\n## Notes\n## Notes\n### 1. Start: now!",
      ),
    ],
    [
      "the-hello-event",
      "every-key-with-its-limits",
      "notes",
      "notes-1",
      "1-start-now",
    ],
  );
});

Deno.test("every path the README and docs/ cite in code exists in the repository", () => {
  assert.deepEqual(documents().flatMap((file) => missingPaths(file, disk)), []);
});

Deno.test("the README's config table lists every key of the schema, and only those, with the schema's defaults", () => {
  const keys = configKeys(resolvePaths(XDG));
  const readme = disk.text("README.md")!;
  const [table] = tables(section(readme, "Config"));
  assert.ok(table, "no table under ## Config");
  const rows = new Map(table.map((row) => [firstName(row), row]));
  assert.deepEqual([...rows.keys()].sort(), Object.keys(keys).sort());
  const wrong: string[] = [];
  for (const [name, declaration] of Object.entries(keys)) {
    const value: unknown = declaration.schema.parse(undefined);
    const row = rows.get(name)!;
    const [, shown = ""] = row;
    const whole = row.join(" ").replace(/\s+/g, "");
    if (typeof value === "number" || typeof value === "boolean") {
      if (shown !== `\`${value}\``) {
        wrong.push(`${name}: ${shown}, not ${value}`);
      }
    } else if (typeof value === "string" && value.length <= 40) {
      if (!shown.includes(`"${value}"`) && !shown.includes(`\`${value}\``)) {
        wrong.push(`${name}: ${shown}, not "${value}"`);
      }
    } else if (Array.isArray(value) && name !== "tools_dirs") {
      if (!whole.includes(JSON.stringify(value))) {
        wrong.push(`${name}: no ${JSON.stringify(value)} in its row`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("docs/protocol.md's commands table has every command the parser accepts, and only those", async () => {
  const source = await Deno.readTextFile(
    join(ROOT, "src/protocol/commands.ts"),
  );
  const declared = typeNames(source, "export type Command =");
  assert.ok(declared.length >= 14, `only ${declared.join(", ")}`);
  for (const type of declared) {
    const parsed = parseCommand({ type });
    assert.ok(
      parsed.ok || parsed.code !== "unknown_command",
      `${type} is declared but not accepted`,
    );
  }
  // The parser accepts no type the union leaves out.
  const shapes = source.slice(source.indexOf("const SHAPES"));
  const accepted = [
    ...shapes.slice(0, shapes.indexOf("\n};")).matchAll(/^ {2}(\w+): /gm),
  ].map((m) => m[1]!);
  assert.deepEqual(accepted.sort(), [...declared].sort());
  const protocol = disk.text("docs/protocol.md")!;
  const [table] = tables(section(protocol, "Commands"));
  assert.ok(table, "no table under ## Commands");
  assert.deepEqual(table.map(firstName).sort(), [...declared].sort());
});

Deno.test("docs/protocol.md's events table has every event the daemon sends, and its hello table every field of hello", async () => {
  const source = await Deno.readTextFile(join(ROOT, "src/protocol/events.ts"));
  const events = typeNames(source, "export type Event =");
  assert.ok(events.length >= 20, `only ${events.join(", ")}`);
  const protocol = disk.text("docs/protocol.md")!;
  const [table] = tables(section(protocol, "Events"));
  assert.ok(table, "no table under ## Events");
  assert.deepEqual(table.map(firstName).sort(), [...events].sort());
  const from = source.indexOf('type: "hello";');
  const block = source.slice(from, source.indexOf("\n  }", from));
  const fields = [...block.matchAll(/^ {4}(\w+)\??:/gm)].map((m) => m[1]!)
    .filter((name) => name !== "type");
  const [hello] = tables(section(protocol, "hello"));
  assert.ok(hello, "no table under ### hello");
  assert.deepEqual(hello.map(firstName).sort(), fields.sort());
});

Deno.test("docs/protocol.md's References name every event that can carry a ref", async () => {
  const source = await Deno.readTextFile(join(ROOT, "src/protocol/events.ts"));
  const from = source.indexOf("export type Event =");
  const union = source.slice(from, source.indexOf(";\n\n", from));
  const carrying: string[] = [];
  for (const member of union.split(/\n {2}\| /)) {
    const type = /type: "(\w+)"/.exec(member)?.[1];
    if (type && /\bref\?: Ref\b/.test(member)) carrying.push(type);
  }
  // The error event is an interface of its own.
  if (/interface ErrorEvent \{[^}]*\bref\?: Ref\b/.test(source)) {
    carrying.push("error");
  }
  assert.ok(carrying.length >= 10, `only ${carrying.join(", ")}`);
  const named = new Set(
    codeSpans(section(disk.text("docs/protocol.md")!, "References")),
  );
  assert.deepEqual(carrying.filter((type) => !named.has(type)), []);
});

Deno.test("docs/protocol.md's error tables have every code, each in its table: command errors, then turn errors", () => {
  const protocol = disk.text("docs/protocol.md")!;
  const [commands, turns] = tables(section(protocol, "Errors"))
    .filter((rows) => rows.some((row) => /^`[a-z_]+`$/.test(row[0] ?? "")));
  assert.ok(commands && turns, "two error tables under ## Errors");
  assert.deepEqual(commands.map(firstName), [...COMMAND_ERROR_CODES]);
  assert.deepEqual(turns.map(firstName), [...TURN_ERROR_CODES]);
});
