/**
 * The tier's tiny models, written once per test process into a temporary
 * directory (removed when the process ends): what each scenario serves.
 */
import { type TinyKind, writeTinyModel } from "../support/gguf_models.ts";
import type { LlamaBuild } from "./build.ts";

/** The models a scenario may serve, by role. */
export type Role = "shift" | "swa" | "embed" | "second";

const KINDS: Record<Role, { kind: TinyKind; seed: number }> = {
  shift: { kind: "qwen3", seed: 1 },
  swa: { kind: "gemma3", seed: 2 },
  embed: { kind: "embed", seed: 3 },
  // The router's second model: another seed of the first.
  second: { kind: "qwen3", seed: 4 },
};

let dir: string | null = null;
const written = new Map<Role, Promise<string>>();

/** The model file for `role` (written on first use), named `tiny-<role>.gguf`. */
export function modelPath(build: LlamaBuild, role: Role): Promise<string> {
  let path = written.get(role);
  if (!path) {
    path = write(build, role);
    written.set(role, path);
  }
  return path;
}

async function write(build: LlamaBuild, role: Role): Promise<string> {
  if (dir === null) {
    dir = await Deno.makeTempDir({ prefix: "da-real-models-" });
    const made = dir;
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(made, { recursive: true });
    });
  }
  const { kind, seed } = KINDS[role];
  const path = `${dir}/tiny-${role}.gguf`;
  await writeTinyModel(path, {
    kind,
    seed,
    vocabPath: build.vocab,
    name: `tiny-${role}`,
    ...(kind === "embed"
      ? {}
      : { template: await Deno.readTextFile(build.template) }),
  });
  return path;
}
