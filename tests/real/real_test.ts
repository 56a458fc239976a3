/**
 * The real llama-server tier: every scenario against a llama-server built
 * from a registry package and against the fake, compared. Without a build
 * it prints one line and runs nothing; in CI a missing build fails.
 */
import { buildDir, findBuild, inCi, SKIP_LINE } from "./build.ts";
import { FILES_SCENARIOS } from "./files.ts";
import { MEANING_SCENARIOS } from "./meaning.ts";
import { COST_SCENARIOS } from "./prompt_cost.ts";
import { REPLY_SCENARIOS } from "./replies.ts";
import { ROUTER_SCENARIOS } from "./router.ts";
import { scenarioTest } from "./scenario.ts";
import { WIRE_SCENARIOS } from "./wire.ts";

const build = findBuild();
if (build !== null) {
  for (
    const scenario of [
      ...REPLY_SCENARIOS,
      ...COST_SCENARIOS,
      ...ROUTER_SCENARIOS,
      ...WIRE_SCENARIOS,
      ...MEANING_SCENARIOS,
      ...FILES_SCENARIOS,
    ]
  ) {
    scenarioTest(build, scenario);
  }
} else if (inCi()) {
  Deno.test("the real llama-server tier has its build", () => {
    throw new Error(
      `CI=true but no llama-server build in ${buildDir()}: ` +
        "bash .ci/llama_build.sh (deno task llama-build) makes it",
    );
  });
} else {
  Deno.stdout.writeSync(new TextEncoder().encode(`${SKIP_LINE}\n`));
}
