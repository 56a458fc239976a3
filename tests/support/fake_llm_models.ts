/**
 * The fake llama-server's model side: `/v1/models`, `/props` and a router's
 * model resolution, shaped like the captures in the shared fixtures, and
 * the answers of every endpoint but chat.
 */
import { applyTemplateAnswer, tokenizeAnswer } from "./fake_llm_context.ts";
import { errorBody } from "./fake_llm_scripts.ts";
import { modalities } from "./fake_llm_wire.ts";

/** The single-mode model's id: a model path, as llama-server reports it. */
export const SINGLE_ID = "/srv/models/tiny.gguf";

/** A JSON answer: HTTP status and body. */
export interface Answer {
  status: number;
  body: unknown;
}

/** A router model's state, as `/v1/models` reports it. */
export type ModelStatus = "loaded" | "loading" | "unloaded" | "sleeping";

/** One model the fake serves. */
export interface FakeModel {
  id: string;
  /** Router mode only; default "loaded". */
  status?: ModelStatus;
  /** Other names the router lists for it (router mode). */
  aliases?: string[];
  /** A failed load: `status.failed: true` (router mode). */
  failed?: boolean;
  /** Context size reported by `meta.n_ctx` and `/props`; default 4096; null reports none (router mode). */
  nCtx?: number | null;
  /** Slots of its server; default the fake's `slots`. */
  slots?: number;
  /** False for a model whose cache cannot shift (it ignores `n_cache_reuse`); default the fake's `shift`. */
  shift?: boolean;
  /** Served with `--mmproj`: it reads pictures (`/props` `modalities.vision`). */
  vision?: boolean;
  /** Served with `--embeddings`: `/v1/embeddings` answers. */
  embeddings?: boolean;
  /** Physical batch (`-ub`): an embedding input of more tokens is refused, as a mean-pooled model's is; default 512. */
  ubatch?: number;
}

/** `/v1/models` (and `/models`) as the mode answers it. */
export function modelList(
  mode: "single" | "router",
  models: readonly FakeModel[],
): unknown {
  const created = Math.floor(Date.now() / 1000);
  const meta = (model: FakeModel) => ({
    vocab_type: true,
    n_vocab: 50272,
    n_ctx: model.nCtx ?? 4096,
    n_ctx_train: model.nCtx ?? 4096,
    n_embd: 64,
    n_params: 6517056,
    size: 26068224,
    ftype: "all F32",
  });
  if (mode === "single") {
    const model = models[0] ?? { id: SINGLE_ID };
    return {
      models: [{
        name: model.id,
        model: model.id,
        type: "model",
        capabilities: ["completion"],
      }],
      object: "list",
      data: [{
        id: model.id,
        aliases: [model.id],
        tags: [],
        object: "model",
        created,
        owned_by: "llamacpp",
        meta: meta(model),
      }],
    };
  }
  return {
    data: models.map((model) => {
      const status = model.status ?? "loaded";
      const awake = status === "loaded" || status === "sleeping";
      return {
        id: model.id,
        aliases: model.aliases ?? [],
        tags: [],
        object: "model",
        owned_by: "llamacpp",
        created,
        status: {
          value: status,
          args: ["llama-server", "--alias", model.id],
          ...(model.failed ? { exit_code: 1, failed: true } : {}),
        },
        source: "models_dir",
        can_remove: false,
        ...(awake && model.nCtx !== null ? { meta: meta(model) } : {}),
      };
    }),
    object: "list",
  };
}

/** `/props` of one model. */
export function modelProps(model: FakeModel): unknown {
  return {
    default_generation_settings: {
      params: {},
      ...(model.nCtx === null ? {} : { n_ctx: model.nCtx ?? 4096 }),
    },
    total_slots: 4,
    model_alias: model.id,
    model_path: model.id,
    modalities: modalities(model),
    build_info: "b0-unknown",
    is_sleeping: model.status === "sleeping",
  };
}

/** A router's answer to naming `id`: the model (loaded now when autoload is on, recorded in `autoloads`), or the error it sends. */
export function resolveModel(
  models: readonly FakeModel[],
  id: unknown,
  url: URL,
  autoloads: string[],
): FakeModel | Answer {
  if (typeof id !== "string" || id === "") {
    return {
      status: 400,
      body: errorBody(400, "model name is missing from the request"),
    };
  }
  const model = models.find((m) => m.id === id);
  if (!model) {
    return { status: 400, body: errorBody(400, `model '${id}' not found`) };
  }
  const status = model.status ?? "loaded";
  if (status === "loaded" || status === "sleeping") return model;
  if (url.searchParams.get("autoload") === "false") {
    return { status: 400, body: errorBody(400, "model is not loaded") };
  }
  // What a real router does here is load it, swapping another model out.
  autoloads.push(id);
  if (model.failed) {
    return {
      status: 500,
      body: errorBody(500, `model name=${id} failed to load`),
    };
  }
  model.status = "loaded";
  return model;
}

/** `/props`: a single model's, the router's own, or a named model's (which may load it). */
export function propsAnswer(
  mode: "single" | "router",
  models: readonly FakeModel[],
  url: URL,
  autoloads: string[],
): Answer {
  if (mode === "single") {
    return { status: 200, body: modelProps(models[0] ?? { id: SINGLE_ID }) };
  }
  if (!url.searchParams.has("model")) {
    return {
      status: 200,
      body: {
        role: "router",
        max_instances: 4,
        models_autoload: true,
        model_alias: "llama-server",
        model_path: "none",
        default_generation_settings: { params: null, n_ctx: 0 },
        build_info: "b0-unknown",
      },
    };
  }
  const model = resolveModel(
    models,
    url.searchParams.get("model"),
    url,
    autoloads,
  );
  return "body" in model ? model : { status: 200, body: modelProps(model) };
}

/** Every endpoint but chat: `/health`, the model lists, `/props`, `/tokenize`, `/apply-template`, else 404. */
export function plainAnswer(
  mode: "single" | "router",
  models: readonly FakeModel[],
  method: string,
  url: URL,
  body: unknown,
  autoloads: string[],
): Answer {
  if (method !== "POST") {
    switch (url.pathname) {
      case "/health":
        return { status: 200, body: { status: "ok" } };
      case "/models":
      case "/v1/models":
        return { status: 200, body: modelList(mode, models) };
      case "/props":
        return propsAnswer(mode, models, url, autoloads);
      default:
        return { status: 404, body: errorBody(404) };
    }
  }
  if (mode === "router") {
    const model = (body as { model?: unknown } | undefined)?.model;
    const resolved = resolveModel(models, model, url, autoloads);
    if ("body" in resolved) return resolved;
  }
  return url.pathname === "/tokenize"
    ? tokenizeAnswer(body)
    : url.pathname === "/apply-template"
    ? applyTemplateAnswer(body)
    : { status: 404, body: errorBody(404) };
}
