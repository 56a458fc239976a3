/** A tool call's arguments: checked against the tool's parameters, and substituted into argv. */
import type { ToolDef, ToolParam } from "./load.ts";

/** A short JSON rendering of a value, for messages to the model. */
export function brief(value: unknown): string {
  const text = typeof value === "number" && !Number.isFinite(value)
    ? String(value)
    : JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** The tool's parameters in one line, for messages to the model. */
function signature(tool: ToolDef): string {
  const params = Object.entries(tool.parameters).map(([name, param]) =>
    `${name} (${param.type}${param.required ? ", required" : ""})`
  );
  return params.length === 0 ? "no parameters" : params.join(", ");
}

function typeProblem(
  name: string,
  param: ToolParam,
  value: unknown,
): string | null {
  const ok = param.type === "string"
    ? typeof value === "string"
    : param.type === "number"
    ? typeof value === "number" && Number.isFinite(value)
    : param.type === "integer"
    ? typeof value === "number" && Number.isInteger(value)
    : typeof value === "boolean";
  if (!ok) {
    return `"${name}" must be ${
      param.type === "integer" ? "an" : "a"
    } ${param.type}, not ${brief(value)}`;
  }
  if (param.enum && !param.enum.includes(value as string | number)) {
    return `"${name}" must be one of ${param.enum.map(brief).join(", ")}, not ${
      brief(value)
    }`;
  }
  return null;
}

/** The arguments object, or what is wrong with it in words the model can act on. */
export function checkArguments(
  tool: ToolDef,
  argsJson: string,
): { args: Record<string, unknown> } | { problem: string } {
  let parsed: unknown;
  try {
    // Models send "" for a call without parameters.
    parsed = argsJson.trim() === "" ? {} : JSON.parse(argsJson);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return {
      problem:
        `The arguments for ${tool.name} are not valid JSON (${detail}). ` +
        `Send one JSON object; parameters: ${
          signature(tool)
        }. The tool did not run.`,
    };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return {
      problem:
        `The arguments for ${tool.name} must be a JSON object, not ${
          brief(parsed)
        }; ` +
        `parameters: ${signature(tool)}. The tool did not run.`,
    };
  }
  const args = parsed as Record<string, unknown>;
  const problems: string[] = [];
  for (const [name, param] of Object.entries(tool.parameters)) {
    const value = args[name];
    if (value === undefined || value === null) {
      if (param.required) {
        problems.push(`missing required parameter "${name}" (${param.type})`);
      }
      continue;
    }
    const problem = typeProblem(name, param, value);
    if (problem) problems.push(problem);
  }
  for (const name of Object.keys(args)) {
    if (!Object.hasOwn(tool.parameters, name)) {
      problems.push(`unknown parameter "${name}"`);
    }
  }
  if (problems.length > 0) {
    return {
      problem: `Invalid arguments for ${tool.name}: ${problems.join("; ")}. ` +
        `Parameters: ${signature(tool)}. The tool did not run.`,
    };
  }
  return { args };
}

/** Replaces `{param}` inside one argv element; the value never leaves it. */
export function substitute(
  element: string,
  args: Record<string, unknown>,
  params: Record<string, ToolParam>,
): string {
  return element.replace(
    /\{([A-Za-z0-9_-]{1,64})\}/g,
    (whole, name: string) => {
      if (!Object.hasOwn(params, name)) return whole;
      const value = args[name];
      return value === undefined || value === null ? "" : String(value);
    },
  );
}
