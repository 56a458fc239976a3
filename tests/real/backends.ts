/**
 * The two servers every scenario of the tier runs against: the real
 * llama-server serving tiny models, and the fake the rest of the suite
 * uses, behind one interface.
 */
import assert from "node:assert/strict";
import {
  FakeLlm,
  type FakeLlmOptions,
  type Script,
} from "../support/fake_llm.ts";
import type { LlamaBuild } from "./build.ts";
import { LlamaServer } from "./llama_server.ts";
import { modelPath, type Role } from "./models.ts";

/** Which server a run used. */
export type Kind = "real" | "fake";

/** A server a scenario runs against. */
export interface Backend extends AsyncDisposable {
  readonly kind: Kind;
  readonly url: string;
  /** GET (or POST with a body) a path; the status and the parsed JSON body. */
  json(
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }>;
  /** Resolves once the request a client abandoned has let go of its slot; at most 20 s. */
  released(): Promise<void>;
  /** A router: resolves once model `id` has `status` (`loaded`, `unloaded`); at most 60 s. */
  modelStatus(id: string, status: string): Promise<void>;
}

/** A router's model statuses, by id, from `GET /v1/models`. */
export async function statuses(
  backend: Backend,
): Promise<Record<string, string>> {
  const { body } = await backend.json("/v1/models");
  const data = (body as { data: { id: string; status: { value: string } }[] })
    .data;
  return Object.fromEntries(
    data.map((model) => [model.id, model.status.value]),
  );
}

/**
 * Waits on the router's `/models/sse` for model `id` to reach `status`;
 * the stream is opened before the status is read, so no change is missed.
 */
async function routerStatus(
  backend: Backend,
  id: string,
  status: string,
): Promise<void> {
  const signal = AbortSignal.timeout(60_000);
  const response = await fetch(`${backend.url}/models/sse`, { signal });
  const lines = response.body!.pipeThrough(new TextDecoderStream())
    .getReader();
  try {
    if ((await statuses(backend))[id] === status) return;
    let pending = "";
    while (true) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`/models/sse ended before ${id} was ${status}`);
      pending += value;
      const events = pending.split("\n\n");
      pending = events.pop() ?? "";
      for (const event of events) {
        const change = JSON.parse(event.replace(/^data: /, "")) as {
          model: string;
          data: { status: string };
        };
        if (change.model === id && change.data.status === status) return;
      }
    }
  } finally {
    await lines.cancel();
  }
}

/** How the real server is started for a scenario. */
export type RealSetup =
  | { role: Role; args?: string[] }
  | { router: Record<string, Role>; args?: string[] };

/** How the fake is started for a scenario, and what it answers, in order. */
export interface FakeSetup {
  options?: FakeLlmOptions;
  scripts?: Script[];
}

async function fetchJson(
  url: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, {
    method: body === undefined ? "GET" : "POST",
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, body: await response.json() };
}

/** Starts the real llama-server for `setup`. */
export async function realBackend(
  build: LlamaBuild,
  setup: RealSetup,
): Promise<Backend> {
  let args: string[];
  let dir: string | null = null;
  if ("role" in setup) {
    args = ["-m", await modelPath(build, setup.role)];
  } else {
    // The router serves a folder; a model's id is its file's stem.
    dir = await Deno.makeTempDir({ prefix: "da-real-router-" });
    for (const [id, role] of Object.entries(setup.router)) {
      await Deno.symlink(await modelPath(build, role), `${dir}/${id}.gguf`);
    }
    args = ["--models-dir", dir];
  }
  const server = await LlamaServer.start({
    build,
    args: [...args, ...(setup.args ?? [])],
  }).catch(async (error) => {
    if (dir) await Deno.remove(dir, { recursive: true });
    throw error;
  });
  const released = /stop processing/;
  const backend: Backend = {
    kind: "real",
    url: server.url,
    json: (path, body) => fetchJson(`${server.url}${path}`, body),
    // Every request's slot logs "stop processing" when it lets go.
    released: async () => {
      const before = server.log.match(new RegExp(released, "g"))?.length ?? 0;
      const slots = await fetchJson(`${server.url}/slots`);
      const busy = Array.isArray(slots.body) &&
        slots.body.some((slot) => slot?.is_processing === true);
      if (busy) await server.waitForLog(released, before + 1, 20_000);
    },
    modelStatus: (id, status) => routerStatus(backend, id, status),
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      if (dir) await Deno.remove(dir, { recursive: true });
    },
  };
  return backend;
}

/** Starts the fake for `setup`. */
export async function fakeBackend(setup: FakeSetup): Promise<Backend> {
  const llm = await FakeLlm.start(setup.options);
  llm.enqueue(...(setup.scripts ?? []));
  return {
    kind: "fake",
    url: llm.url,
    json: (path, body) => fetchJson(`${llm.url}${path}`, body),
    // A chat request's slot is free once its answer is over, either way.
    released: async () => {
      const last = llm.chats.at(-1);
      if (!last) return;
      const timeout = Promise.withResolvers<never>();
      const timer = setTimeout(
        () => timeout.reject(new Error("the slot was not released in 20 s")),
        20_000,
      );
      try {
        await Promise.race([last.done, timeout.promise]);
      } finally {
        clearTimeout(timer);
      }
    },
    // The fake's router loads and unloads at once.
    modelStatus: (id, status) => {
      const model = llm.models.find((m) => m.id === id);
      assert.equal(model?.status ?? "loaded", status, `${id}'s status`);
      return Promise.resolve();
    },
    [Symbol.asyncDispose]: () => llm[Symbol.asyncDispose](),
  };
}
