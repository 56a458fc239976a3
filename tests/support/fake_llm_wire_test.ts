/**
 * The fake against the captures of the September 2026 release
 * (`tests/fixtures/llama-server/release_2026_09/`), where the real-server
 * tier found it wrong: `/props` modalities, `/slots`, a picture refused
 * without `--mmproj`, embeddings with and without `--embeddings` (an input
 * too long or empty refused), the router's load and unload, and the prompt
 * of a turn without thinking.
 */
import assert from "node:assert/strict";
import { FakeLlm, hold } from "./fake_llm.ts";
import { post, shape } from "./fake_llm_sse.ts";

const CAPTURES = new URL("../fixtures/llama-server/", import.meta.url).pathname;

/** A capture's JSON body and the status its headers carry. */
function captured(name: string): { status: number; body: unknown } {
  const path = `${CAPTURES}${name}`;
  const head = Deno.readTextFileSync(`${path}.headers.txt`);
  return {
    status: Number(head.match(/^HTTP\/\S+ (\d{3})/)?.[1]),
    body: JSON.parse(Deno.readTextFileSync(`${path}.json`)),
  };
}

/** A captured request's body. */
function request(name: string): Record<string, unknown> {
  return JSON.parse(
    Deno.readTextFileSync(`${CAPTURES}${name}.request.json`),
  );
}

async function answer(
  llm: FakeLlm,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${llm.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

Deno.test("/props says which media the model reads, as captured", async () => {
  await using llm = await FakeLlm.start();
  const props = await answer(llm, "/props");
  const real = captured("release_2026_09/get_props").body as {
    modalities: unknown;
  };
  assert.deepEqual(
    (props.body as { modalities: unknown }).modalities,
    real.modalities,
  );
});

Deno.test("/slots lists each slot with the captured fields, processing while a reply streams", async () => {
  await using llm = await FakeLlm.start({ slots: 4 });
  const idle = await answer(llm, "/slots");
  const real = captured("release_2026_09/get_slots_idle");
  assert.deepEqual(shape(idle.body), shape(real.body));
  assert.deepEqual(idle.body, real.body);
  llm.enqueue(hold(["Once"]));
  const controller = new AbortController();
  const response = await post(llm, { messages: [] }, "", controller.signal);
  const reader = response.body!.getReader();
  await reader.read();
  const busy = (await answer(llm, "/slots")).body as {
    is_processing: boolean;
  }[];
  assert.deepEqual(busy.map((slot) => slot.is_processing), [
    true,
    false,
    false,
    false,
  ]);
  controller.abort();
  await reader.read().catch(() => {});
  await llm.chats[0]!.done;
  assert.deepEqual((await answer(llm, "/slots")).body, real.body);
});

Deno.test("a picture for a model without --mmproj gets the captured 500, streamed or not", async () => {
  await using llm = await FakeLlm.start();
  for (
    const name of [
      "err_image_no_mmproj_stream",
      "err_image_no_mmproj_nonstream",
    ]
  ) {
    const sent = request(`release_2026_09/${name}`);
    const response = await post(llm, sent);
    const body = await response.json();
    assert.deepEqual(
      { status: response.status, body },
      captured(`release_2026_09/${name}`),
      name,
    );
  }
  // A model served with its projector reads it.
  await using vision = await FakeLlm.start({
    models: [{ id: "/srv/models/vision.gguf", vision: true }],
  });
  const read = await post(
    vision,
    request("release_2026_09/err_image_no_mmproj_stream"),
  );
  assert.equal(read.status, 200);
  await read.body?.cancel();
});

Deno.test("embeddings have the captured shape; without --embeddings the captured 501", async () => {
  await using plain = await FakeLlm.start();
  assert.deepEqual(
    await answer(
      plain,
      "/v1/embeddings",
      request("release_2026_09/err_embeddings_not_enabled"),
    ),
    captured("release_2026_09/err_embeddings_not_enabled"),
  );
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny-embed.gguf", embeddings: true }],
  });
  for (const name of ["embeddings_two_inputs", "embeddings_named_model"]) {
    const fake = await answer(
      llm,
      "/v1/embeddings",
      request(`release_2026_09/${name}`),
    );
    const real = captured(`release_2026_09/${name}`);
    assert.equal(fake.status, real.status, name);
    assert.deepEqual(shape(fake.body), shape(real.body), name);
    const named = (real.body as { model: string }).model;
    if (!named.startsWith("/srv/")) {
      assert.equal((fake.body as { model: string }).model, named);
    }
  }
});

Deno.test("an embedding input longer than the physical batch, or empty, fails the request as captured", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny-embed.gguf", embeddings: true }],
  });
  for (const name of ["err_embeddings_too_large", "err_embeddings_empty"]) {
    assert.deepEqual(
      await answer(llm, "/v1/embeddings", request(`release_2026_09/${name}`)),
      captured(`release_2026_09/${name}`),
      name,
    );
  }
});

Deno.test("without thinking the prompt ends with the captured empty think block", async () => {
  await using llm = await FakeLlm.start();
  const fake = await answer(
    llm,
    "/apply-template",
    request("release_2026_09/apply_template_thinking_off"),
  );
  assert.deepEqual(
    fake,
    captured("release_2026_09/apply_template_thinking_off"),
  );
});

Deno.test("the router's load and unload answer as captured", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [{ id: "tiny-a", status: "loaded" }, {
      id: "tiny-b",
      status: "unloaded",
    }],
  });
  const cases: [string, string, string][] = [
    ["/models/load", "tiny-b", "post_models_load_tiny_b"],
    ["/models/load", "tiny-a", "post_models_load_already_running"],
    ["/models/load", "tiny-z", "post_models_load_unknown"],
    ["/models/unload", "tiny-a", "post_models_unload_tiny_a"],
    ["/models/unload", "tiny-a", "post_models_unload_not_running"],
  ];
  for (const [path, model, name] of cases) {
    const fake = await answer(llm, path, { model });
    const real = JSON.parse(
      Deno.readTextFileSync(`${CAPTURES}router_models_dir/${name}.json`),
    );
    assert.deepEqual(fake.body, real, name);
  }
  assert.deepEqual(
    llm.models.map((model) => model.status),
    ["unloaded", "loaded"],
  );
});
