import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { setLogSink } from "../../src/base/log.ts";
import { resolveExecutable } from "../../src/tools/executable.ts";
import { loadTools, type ToolDef, toolSchemas } from "../../src/tools/load.ts";
import { runTool } from "../../src/tools/runner.ts";

const TOOLS_DIR = fileURLToPath(new URL("../../tools", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../fixtures/tools", import.meta.url));
const BROKEN = `${FIXTURES}/broken`;

/** Collects log lines for the duration of `body`. */
async function withLog<T>(body: () => Promise<T>): Promise<[T, string[]]> {
  const lines: string[] = [];
  const previous = setLogSink({ write: (line) => lines.push(line) });
  try {
    return [await body(), lines];
  } finally {
    setLogSink(previous);
  }
}

function byName(tools: ToolDef[]): Map<string, ToolDef> {
  return new Map(tools.map((tool) => [tool.name, tool]));
}

async function writeExecutable(path: string, text: string): Promise<void> {
  await Deno.writeTextFile(path, text);
  await Deno.chmod(path, 0o755);
}

Deno.test("the example tools load and produce the right JSON schemas", async () => {
  const [{ tools, skipped }] = await withLog(() => loadTools([TOOLS_DIR]));
  assert.deepEqual(skipped, []);
  assert.deepEqual(tools.map((tool) => tool.name), [
    "date",
    "weather",
    "wikipedia",
  ]);
  const date = tools[0];
  assert.ok(
    date?.executable.startsWith("/") && date.executable.endsWith("/date"),
  );
  assert.equal(
    tools[1]?.executable,
    `${Deno.realPathSync(TOOLS_DIR)}/weather.sh`,
  );
  assert.equal(tools[1]?.timeout, 25);
  assert.equal(tools[2]?.file, `${TOOLS_DIR}/wikipedia.toml`);
  assert.deepEqual(toolSchemas(tools), [
    {
      type: "function",
      function: {
        name: "date",
        description:
          "The local date, time and time zone of the user's computer",
        parameters: {
          type: "object",
          properties: {},
          required: [],
          additionalProperties: false,
        },
      },
    },
    {
      type: "function",
      function: {
        name: "weather",
        description:
          "Current weather and today's forecast for a place (Open-Meteo; metric units)",
        parameters: {
          type: "object",
          properties: {
            place: {
              type: "string",
              description:
                'City or place name, e.g. "Bologna" or "Springfield, Illinois"',
            },
          },
          required: ["place"],
          additionalProperties: false,
        },
      },
    },
    {
      type: "function",
      function: {
        name: "wikipedia",
        description: "The summary (lead section) of a Wikipedia article",
        parameters: {
          type: "object",
          properties: {
            topic: {
              type: "string",
              description: 'The article title or topic, e.g. "Alan Turing"',
            },
            language: {
              type: "string",
              description:
                'Wikipedia language code, e.g. "en", "it", "de" (default "en")',
            },
          },
          required: ["topic"],
          additionalProperties: false,
        },
      },
    },
  ]);
});

Deno.test("the date tool prints today's date", async () => {
  const [{ tools }] = await withLog(() => loadTools([TOOLS_DIR]));
  const [outcome] = await withLog(() =>
    runTool(byName(tools), "date", "{}", {
      outputLimit: 1024,
      defaultTimeout: 10,
    })
  );
  assert.equal(outcome.status, "exit 0");
  const year = String(new Date().getFullYear());
  assert.match(
    outcome.content,
    new RegExp(`^\\w+day \\d\\d \\w+ ${year}, \\d\\d:\\d\\d:\\d\\d `),
  );
});

Deno.test("broken files and missing executables are skipped with a logged reason; the rest load and run", async () => {
  const [{ tools, skipped }, lines] = await withLog(() => loadTools([BROKEN]));
  assert.deepEqual(tools.map((tool) => tool.name), ["good"]);
  const reasons = Object.fromEntries(
    skipped.map(({ file, reason }) => [file.slice(BROKEN.length + 1), reason]),
  );
  assert.deepEqual(Object.keys(reasons), [
    "bad_timeout.toml",
    "bad_type.toml",
    "broken.toml",
    "missing_command.toml",
    "missing_exe.toml",
    "no_description.toml",
    "not_executable.toml",
  ]);
  assert.equal(
    reasons["bad_timeout.toml"],
    "timeout must be a positive number of seconds",
  );
  assert.equal(
    reasons["bad_type.toml"],
    "parameters.items.type must be one of string, number, integer, boolean",
  );
  assert.match(reasons["broken.toml"] ?? "", /^TOML syntax error at 3:11: /);
  assert.equal(
    reasons["missing_command.toml"],
    "executable no-such-command-desktop-assistant was not found on PATH",
  );
  assert.equal(
    reasons["missing_exe.toml"],
    `executable ./nope.sh is not there or not executable (relative paths start at ${BROKEN})`,
  );
  assert.equal(
    reasons["no_description.toml"],
    "description must be a non-empty string",
  );
  assert.match(
    reasons["not_executable.toml"] ?? "",
    /not_executable\.sh is not there or not executable/,
  );
  for (const { file, reason } of skipped) {
    assert.ok(
      lines.some((line) =>
        line.includes(" warn tool skipped ") && line.includes(`file=${file}`) &&
        line.includes(JSON.stringify(reason))
      ),
      `no log line for ${file}`,
    );
  }
  const [outcome] = await withLog(() =>
    runTool(byName(tools), "good", "{}", {
      outputLimit: 100,
      defaultTimeout: 10,
    })
  );
  assert.equal(outcome.status, "exit 0");
});

Deno.test("a tool whose executable --allow-run does not cover is skipped, naming the flag", async () => {
  const denied = `${Deno.realPathSync(FIXTURES)}/echo_args.sh`;
  const [{ tools, skipped }] = await withLog(() =>
    loadTools([FIXTURES], { canRun: (path) => path !== denied })
  );
  assert.ok(
    !tools.some((tool) => tool.name === "echo_args" || tool.name === "typed"),
  );
  assert.ok(tools.some((tool) => tool.name === "fail"));
  assert.deepEqual(skipped, [
    {
      file: `${FIXTURES}/echo_args.toml`,
      reason: `--allow-run does not cover ${denied}`,
    },
    {
      file: `${FIXTURES}/typed.toml`,
      reason: `--allow-run does not cover ${denied}`,
    },
  ]);
});

Deno.test("an earlier dir's tool wins over a later one of the same name, even when broken", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${root}/user`);
    await Deno.mkdir(`${root}/bundled`);
    const tool = (description: string) =>
      `description = "${description}"\ncommand = ["true"]\n`;
    await Deno.writeTextFile(`${root}/user/shared.toml`, tool("from the user"));
    await Deno.writeTextFile(`${root}/user/override.toml`, "description = \n");
    await Deno.writeTextFile(`${root}/bundled/shared.toml`, tool("bundled"));
    await Deno.writeTextFile(`${root}/bundled/override.toml`, tool("bundled"));
    await Deno.writeTextFile(
      `${root}/bundled/alpha.toml`,
      tool("only bundled"),
    );
    await Deno.writeTextFile(`${root}/bundled/notes.txt`, "not a tool");
    const [{ tools, skipped }] = await withLog(() =>
      loadTools([`${root}/user`, `${root}/absent`, `${root}/bundled`])
    );
    assert.deepEqual(
      tools.map((t) => [t.name, t.description]),
      [["alpha", "only bundled"], ["shared", "from the user"]],
    );
    assert.deepEqual(skipped.map((s) => s.file), [
      `${root}/user/override.toml`,
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("tool files are validated field by field", async () => {
  const root = await Deno.makeTempDir();
  try {
    const files: Record<string, string> = {
      "bad name.toml": 'description = "d"\ncommand = ["true"]\n',
      "param_name.toml":
        'description = "d"\ncommand = ["true"]\n[parameters."a b"]\ntype = "string"\n',
      "enum_type.toml":
        'description = "d"\ncommand = ["true"]\n[parameters.n]\ntype = "integer"\nenum = [1, "two"]\n',
      "command_type.toml": 'description = "d"\ncommand = "true"\n',
      "command_empty.toml": 'description = "d"\ncommand = []\n',
      "required_type.toml":
        'description = "d"\ncommand = ["true"]\n[parameters.x]\ntype = "string"\nrequired = "yes"\n',
      "confirm_type.toml":
        'description = "d"\ncommand = ["true"]\nconfirm = 1\n',
      "asks.toml": 'description = "d"\ncommand = ["true"]\nconfirm = true\n',
      "ok.toml":
        'description = "d"\ncommand = ["true", "{x}"]\ntimeout = 0.25\n' +
        'surprise = 1\n[parameters.x]\ntype = "number"\nenum = [1, 2.5]\n',
    };
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(`${root}/${name}`, text);
    }
    const [{ tools, skipped }, lines] = await withLog(() => loadTools([root]));
    const reasons = Object.fromEntries(
      skipped.map(({ file, reason }) => [file.slice(root.length + 1), reason]),
    );
    assert.deepEqual(reasons, {
      "bad name.toml":
        'the file name "bad name" must match ^[A-Za-z0-9_-]{1,64}$ (it is the tool\'s name)',
      "command_empty.toml":
        'command must be a non-empty array of strings, e.g. ["./tool.sh", "{place}"]',
      "command_type.toml":
        'command must be a non-empty array of strings, e.g. ["./tool.sh", "{place}"]',
      "enum_type.toml": "parameters.n.enum values must all be of type integer",
      "param_name.toml":
        'parameter name "a b" must match ^[A-Za-z0-9_-]{1,64}$',
      "required_type.toml": "parameters.x.required must be true or false",
      "confirm_type.toml": "confirm must be true or false",
    });
    assert.deepEqual(
      tools.map((tool) => [tool.name, tool.confirm]),
      [["asks", true], ["ok", false]],
    );
    tools.shift();
    assert.deepEqual(tools[0]?.parameters, {
      x: { type: "number", description: "", required: false, enum: [1, 2.5] },
    });
    assert.equal(tools[0]?.timeout, 0.25);
    assert.deepEqual(tools[0]?.command, ["true", "{x}"]);
    assert.ok(
      lines.some((line) =>
        line.includes("unknown key") && line.includes("key=surprise")
      ),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("resolveExecutable: relative to the TOML dir, symlinks resolved, bare names through PATH", async () => {
  const root = Deno.realPathSync(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${root}/first`);
    await Deno.mkdir(`${root}/second`);
    await Deno.mkdir(`${root}/tools/bin`, { recursive: true });
    await Deno.writeTextFile(`${root}/first/tool`, "not executable");
    await Deno.mkdir(`${root}/first/dir-tool`);
    await writeExecutable(`${root}/second/tool`, "#!/bin/sh\n");
    await writeExecutable(`${root}/second/dir-tool`, "#!/bin/sh\n");
    await writeExecutable(`${root}/tools/bin/real.sh`, "#!/bin/sh\n");
    await Deno.symlink(`${root}/tools/bin/real.sh`, `${root}/tools/link.sh`);
    const path = `relative/dir::${root}/first:${root}/second`;

    assert.equal(resolveExecutable("tool", "/", path), `${root}/second/tool`);
    assert.equal(
      resolveExecutable("dir-tool", "/", path),
      `${root}/second/dir-tool`,
    );
    assert.equal(resolveExecutable("absent", "/", path), null);
    assert.equal(resolveExecutable("", "/", path), null);
    assert.equal(
      resolveExecutable("./bin/real.sh", `${root}/tools`, path),
      `${root}/tools/bin/real.sh`,
    );
    assert.equal(
      resolveExecutable("./link.sh", `${root}/tools`, path),
      `${root}/tools/bin/real.sh`,
    );
    assert.equal(
      resolveExecutable(`${root}/second/tool`, "/elsewhere", path),
      `${root}/second/tool`,
    );
    assert.equal(resolveExecutable("./first/tool", root, path), null);
    assert.equal(resolveExecutable("./nothing.sh", root, path), null);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

const haveCurlJq = ["curl", "jq"].every((name) =>
  resolveExecutable(name, "/", Deno.env.get("PATH") ?? "") !== null
);
const skipNote = haveCurlJq ? "" : " (skipped: curl or jq is not installed)";

/** Runs an example script with its API pointed at a local fake server. */
async function runScript(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(`${TOOLS_DIR}/${script}`, {
    args,
    env: { ...env, NO_PROXY: "127.0.0.1", no_proxy: "127.0.0.1" },
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test({
  name: `weather.sh geocodes the place and formats the forecast${skipNote}`,
  ignore: !haveCurlJq,
  async fn() {
    const requests: URL[] = [];
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => {
        const url = new URL(request.url);
        requests.push(url);
        if (url.pathname === "/v1/search") {
          const results = url.searchParams.get("name") === "Springfield"
            ? [
              {
                name: "Springfield",
                latitude: 37.2,
                longitude: -93.3,
                country: "United States",
                admin1: "Missouri",
              },
              {
                name: "Springfield",
                latitude: 39.8,
                longitude: -89.64,
                country: "United States",
                admin1: "Illinois",
              },
            ]
            : [];
          return Response.json(
            results.length ? { results } : { generationtime_ms: 0.1 },
          );
        }
        return Response.json({
          timezone: "America/Chicago",
          current_units: {
            temperature_2m: "°C",
            apparent_temperature: "°C",
            relative_humidity_2m: "%",
            precipitation: "mm",
            wind_speed_10m: "km/h",
          },
          current: {
            time: "2026-11-30T06:45",
            temperature_2m: 3.1,
            apparent_temperature: -0.4,
            relative_humidity_2m: 81,
            precipitation: 0,
            weather_code: 3,
            wind_speed_10m: 14.2,
            wind_direction_10m: 225,
          },
          daily_units: {
            temperature_2m_max: "°C",
            precipitation_sum: "mm",
            precipitation_probability_max: "%",
          },
          daily: {
            weather_code: [61],
            temperature_2m_max: [7.5],
            temperature_2m_min: [1.2],
            precipitation_sum: [2.4],
            precipitation_probability_max: [70],
            sunrise: ["2026-11-30T06:58"],
            sunset: ["2026-11-30T16:36"],
          },
        });
      },
    );
    const base = `http://127.0.0.1:${server.addr.port}/v1`;
    const env = {
      OPEN_METEO_GEOCODING_URL: `${base}/search`,
      OPEN_METEO_FORECAST_URL: `${base}/forecast`,
    };
    const found = await runScript("weather.sh", ["Springfield, Illinois"], env);
    assert.equal(found.stderr, "");
    assert.equal(found.code, 0);
    assert.equal(
      found.stdout,
      "Weather for Springfield, Illinois, United States (39.8, -89.64), local time 2026-11-30 06:45 (America/Chicago):\n" +
        "Now: 3.1 °C (feels like -0.4 °C), overcast, humidity 81 %, wind 14.2 km/h from SW, precipitation 0 mm\n" +
        "Today: 1.2 to 7.5 °C, light rain, precipitation 2.4 mm (chance 70 %), sunrise 06:58, sunset 16:36\n",
    );
    assert.equal(requests[1]?.searchParams.get("latitude"), "39.8");
    assert.equal(requests[1]?.searchParams.get("longitude"), "-89.64");

    const missing = await runScript("weather.sh", ["Atlantis & $(id)"], env);
    assert.equal(missing.code, 1);
    assert.equal(
      missing.stderr,
      'weather: no place called "Atlantis & $(id)" was found\n',
    );
    assert.equal(requests[2]?.searchParams.get("name"), "Atlantis & $(id)");
  },
});

Deno.test({
  name: `wikipedia.sh fetches and formats a summary${skipNote}`,
  ignore: !haveCurlJq,
  async fn() {
    const paths: string[] = [];
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => {
        const url = new URL(request.url);
        paths.push(url.pathname);
        if (url.pathname !== "/api/rest_v1/page/summary/Alan_Turing") {
          return Response.json({ title: "Not found." }, { status: 404 });
        }
        return Response.json({
          type: "standard",
          title: "Alan Turing",
          description: "English computer scientist (1912–1954)",
          extract: "Alan Mathison Turing was an English mathematician.",
          content_urls: {
            desktop: { page: "https://en.wikipedia.org/wiki/Alan_Turing" },
          },
        });
      },
    );
    const env = { WIKIPEDIA_URL: `http://127.0.0.1:${server.addr.port}` };
    const found = await runScript("wikipedia.sh", [" Alan Turing ", ""], env);
    assert.equal(found.code, 0);
    assert.equal(
      found.stdout,
      "Alan Turing (English computer scientist (1912–1954))\n\n" +
        "Alan Mathison Turing was an English mathematician.\n\n" +
        "Source: https://en.wikipedia.org/wiki/Alan_Turing\n",
    );
    const absent = await runScript(
      "wikipedia.sh",
      ["No such/thing?", "it"],
      env,
    );
    assert.equal(absent.code, 1);
    assert.match(
      absent.stderr,
      /wikipedia: no summary of "No such\/thing\?" on it\.wikipedia\.org \(no such article, or the site is unreachable\)\n$/,
    );
    assert.equal(paths[1], "/api/rest_v1/page/summary/No_such%2Fthing%3F");
    const badLanguage = await runScript("wikipedia.sh", [
      "Turing",
      "evil.example/",
    ], env);
    assert.equal(badLanguage.code, 2);
    assert.match(badLanguage.stderr, /is not a Wikipedia language code/);
    assert.equal(paths.length, 2);
  },
});

Deno.test("the example scripts fail with a clear message when curl or jq is missing", async () => {
  const bash = resolveExecutable("bash", "/", Deno.env.get("PATH") ?? "");
  assert.ok(bash, "bash is needed to run the example scripts");
  const bin = await Deno.makeTempDir();
  try {
    // A PATH with bash alone: the scripts' shebang works, curl and jq are absent.
    await Deno.symlink(bash, `${bin}/bash`);
    const cases: [string, string][] = [["weather.sh", "weather"], [
      "wikipedia.sh",
      "wikipedia",
    ]];
    for (const [script, prefix] of cases) {
      const result = await runScript(script, ["Paris"], { PATH: bin });
      assert.equal(result.code, 2);
      assert.equal(
        result.stderr,
        `${prefix}: curl is not installed; install curl and jq to use this tool\n`,
      );
    }
  } finally {
    await Deno.remove(bin, { recursive: true });
  }
});
