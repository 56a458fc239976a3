/** A model's Markdown answer with one of each block a reply shows, and the way a model streams it. */

/** An answer with a heading, inline styles, a TypeScript block, a table, a nested list and a link; its blocks are a blank line apart. */
export const MARKDOWN_REPLY = [
  "## Reading a file",
  "Use `Deno.readTextFile` and **check** the result, _always_:",
  [
    "```ts",
    "// Reads the config, or the defaults.",
    "export async function load(path: string): Promise<Config> {",
    "  const text = await Deno.readTextFile(path);",
    "  return { ...DEFAULTS, ...JSON.parse(text) } as Config;",
    "}",
    "```",
  ].join("\n"),
  [
    "| Option | Default | Meaning |",
    "| --- | ---: | --- |",
    "| `timeout` | 30 | seconds before a stalled read fails and the next one starts |",
    "| `retries` | 3 | attempts |",
  ].join("\n"),
  "Steps:",
  [
    "1. Read the file",
    "   - as text",
    "   - with a *timeout*",
    "2. Parse it",
  ].join("\n"),
  "See [the manual](https://docs.deno.com/runtime/) for more.",
].join("\n\n");

/** Splits text the way a model streams it: a few characters at a time, spaces and newlines leading a word. */
export function modelTokens(text: string): string[] {
  return text.match(/\s*[^\s]{1,4}|\s+/g) ?? [];
}
