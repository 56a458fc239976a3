/** The toolbox's offer to the model: one order for every tool, whatever order files and servers came in. */
import assert from "node:assert/strict";
import type { ToolDef } from "../../src/tools/load.ts";
import type { McpTool, McpTools } from "../../src/tools/mcp.ts";
import { Toolbox } from "../../src/tools/toolbox.ts";

function file(name: string): ToolDef {
  return {
    name,
    description: `The ${name} tool`,
    command: [`/usr/bin/${name}`],
    executable: `/usr/bin/${name}`,
    timeout: null,
    confirm: false,
    parameters: {
      place: { type: "string", description: "Where", required: true },
    },
    file: `/tools/${name}.toml`,
  };
}

function remote(name: string): McpTool {
  return {
    name,
    remote: name.split("__")[1]!,
    description: `Remote ${name}`,
    inputSchema: { type: "object", properties: { q: { type: "string" } } },
  };
}

/** MCP tools as servers list them, in the order given. */
function servers(tools: McpTool[]): McpTools {
  return {
    tools: () => tools,
    has: (name) => tools.some((tool) => tool.name === name),
    confirms: () => false,
    call: () => Promise.reject(new Error("not called here")),
  };
}

function names(schemas: unknown[]): string[] {
  return schemas.map((schema) =>
    (schema as { function: { name: string } }).function.name
  );
}

const FILES = ["weather", "date", "Zoo", "calc"].map(file);
const REMOTE = ["web__fetch", "fs__read", "fs__list", "calendar__add"].map(
  remote,
);

Deno.test("tool schemas are sorted by name, MCP tools among the files' ones", () => {
  const box = new Toolbox({ tools: FILES, mcp: servers(REMOTE) });
  assert.deepEqual(names(box.schemas()), [
    "Zoo",
    "calc",
    "calendar__add",
    "date",
    "fs__list",
    "fs__read",
    "weather",
    "web__fetch",
  ]);
  assert.deepEqual(names(box.schemas()), box.names());
  // Each keeps its own schema: a file's from its parameters, an MCP tool's as its server sent it.
  const [, calc, calendar] = box.schemas() as {
    function: { description: string; parameters: unknown };
  }[];
  assert.equal(calc!.function.description, "The calc tool");
  assert.deepEqual(calendar!.function.parameters, REMOTE[3]!.inputSchema);
});

Deno.test("the schemas' bytes do not depend on the order of files or servers", () => {
  const reference = JSON.stringify(
    new Toolbox({ tools: FILES, mcp: servers(REMOTE) }).schemas(),
  );
  const orders: [ToolDef[], McpTool[]][] = [
    [FILES.toReversed(), REMOTE.toReversed()],
    [[...FILES.slice(2), ...FILES.slice(0, 2)], [
      ...REMOTE.slice(1),
      REMOTE[0]!,
    ]],
  ];
  for (const [tools, mcp] of orders) {
    const box = new Toolbox({ tools, mcp: servers(mcp) });
    assert.equal(JSON.stringify(box.schemas()), reference);
  }
});

Deno.test("an MCP tool that a tool file's name hides is left out of the schemas", () => {
  const box = new Toolbox({
    tools: [file("fs__read")],
    mcp: servers(REMOTE),
  });
  const schemas = box.schemas() as { function: { description: string } }[];
  assert.deepEqual(names(schemas), [
    "calendar__add",
    "fs__list",
    "fs__read",
    "web__fetch",
  ]);
  assert.equal(schemas[2]!.function.description, "The fs__read tool");
});
