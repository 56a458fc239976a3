/**
 * The llama-server build the real-server tier runs against: where
 * `.ci/llama_build.sh` (`deno task llama-build`) leaves it, and whether the
 * tier runs. Without a build it is skipped with one line; in CI (`CI=true`)
 * a missing build fails the run.
 */

/** The npm package whose bundled llama.cpp release is built. */
export const PACKAGE = "node-llama-cpp@3.21.1";

/** What a finished build holds. */
export interface LlamaBuild {
  dir: string;
  /** The `llama-server` binary. */
  server: string;
  /** llama.cpp's `models/ggml-vocab-gpt-2.gguf`. */
  vocab: string;
  /** A Qwen3.5-style chat template: thinking, XML tool calls. */
  template: string;
  /** What `llama-server --version` printed. */
  version: string;
}

/** The build's directory: `$LLAMA_BUILD_DIR`, else the cache `.ci/llama_build.sh` fills. */
export function buildDir(): string {
  const chosen = Deno.env.get("LLAMA_BUILD_DIR");
  if (chosen) return chosen;
  // The same rule as .ci/llama_build.sh: change both together.
  return `${Deno.env.get("HOME")}/.cache/desktop-assistant/llama-server-${
    PACKAGE.replace("@", "-")
  }`;
}

/** The build, when a complete one is there; else null. */
export function findBuild(dir = buildDir()): LlamaBuild | null {
  const build = {
    dir,
    server: `${dir}/bin/llama-server`,
    vocab: `${dir}/models/ggml-vocab-gpt-2.gguf`,
    template: `${dir}/templates/Qwen3.5-4B.jinja`,
  };
  try {
    for (const path of [`${dir}/complete`, ...Object.values(build).slice(1)]) {
      if (!Deno.statSync(path).isFile) return null;
    }
    const version = Deno.readTextFileSync(`${dir}/version.txt`).trim();
    return { ...build, version };
  } catch {
    return null;
  }
}

/** The line the tier prints when it does not run. */
export const SKIP_LINE =
  "skipped: no llama-server build (deno task llama-build)";

/** Whether this run is CI's, where the tier must run. */
export function inCi(): boolean {
  return Deno.env.get("CI") === "true";
}
