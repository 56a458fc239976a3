/**
 * The GGUF writer read back by the reader, as llama.cpp would read it:
 * typed key/values, the tensor table, and each tensor's data at an aligned
 * offset; and the tokens a tiny model keeps out of a random model's reach.
 */
import assert from "node:assert/strict";
import { GgufType, parseGguf } from "./gguf_read.ts";
import { GgufWriter } from "./gguf_write.ts";
import { Noise, suppressedTokens } from "./gguf_models.ts";

Deno.test("what the writer writes, the reader reads: values with their types, tensors aligned with their data", () => {
  const matrix = Float32Array.from({ length: 6 }, (_, i) => i / 2);
  const vector = Float32Array.of(1.5, -2);
  const bytes = new GgufWriter()
    .string("general.architecture", "qwen3")
    .u32("qwen3.block_count", 2)
    .f32("qwen3.rope.freq_base", 1_000_000)
    .bool("tokenizer.ggml.add_bos_token", false)
    .strings("tokenizer.ggml.tokens", ["a", "città", "<|im_end|>"])
    .i32s("tokenizer.ggml.token_type", [1, 1, 3])
    .tensor("token_embd.weight", [3, 2], matrix)
    .tensor("output_norm.weight", [2], vector)
    .bytes();
  const file = parseGguf(bytes);
  assert.equal(file.version, 3);
  assert.deepEqual(
    [...file.kv].map(([key, { type, value }]) => [key, type, value]),
    [
      ["general.architecture", GgufType.STRING, "qwen3"],
      ["qwen3.block_count", GgufType.UINT32, 2],
      ["qwen3.rope.freq_base", GgufType.FLOAT32, 1_000_000],
      ["tokenizer.ggml.add_bos_token", GgufType.BOOL, false],
      ["tokenizer.ggml.tokens", GgufType.ARRAY, ["a", "città", "<|im_end|>"]],
      ["tokenizer.ggml.token_type", GgufType.ARRAY, [1, 1, 3]],
      ["general.alignment", GgufType.UINT32, 32],
    ],
  );
  assert.deepEqual(
    file.tensors.map(({ name, shape, type }) => [name, shape, type]),
    [["token_embd.weight", [3, 2], 0], ["output_norm.weight", [2], 0]],
  );
  for (const [i, data] of [matrix, vector].entries()) {
    const { offset } = file.tensors[i]!;
    assert.equal(offset % 32, 0, "aligned");
    const read = new Float32Array(
      bytes.slice(offset, offset + data.byteLength).buffer,
    );
    assert.deepEqual(read, data);
  }
  assert.equal(bytes.byteLength, file.tensors[1]!.offset + 32, "padded");
});

Deno.test("the reader refuses what is not GGUF, and a file cut short", () => {
  assert.throws(() => parseGguf(new TextEncoder().encode("not a model")), {
    message: "not a GGUF file",
  });
  const whole = new GgufWriter().string("general.name", "tiny").bytes();
  assert.throws(() => parseGguf(whole.slice(0, 30)), RangeError);
});

Deno.test("a random model keeps away from special tokens and from byte tokens that are not UTF-8 alone", () => {
  // GPT-2's byte-level alphabet: "Ġ" is a space, "Ã" and "©" the two bytes of "é".
  const tokens = ["Ġhello", "Ã©", "Ã", "©", "<|endoftext|>", "<think>"];
  const types = [1, 1, 1, 1, 3, 4];
  assert.deepEqual(suppressedTokens(tokens, types), [2, 3, 4, 5]);
});

Deno.test("the weights' noise is the same for the same seed, another for another", () => {
  const a = new Noise(1).fill(1000, 1);
  assert.deepEqual(new Noise(1).fill(1000, 1), a);
  assert.notDeepEqual(new Noise(2).fill(1000, 1), a);
  const mean = a.reduce((sum, x) => sum + x, 0) / a.length;
  const sd = Math.sqrt(
    a.reduce((sum, x) => sum + (x - mean) ** 2, 0) / a.length,
  );
  assert.ok(Math.abs(mean) < 0.1 && Math.abs(sd - 1) < 0.1, `${mean} ${sd}`);
});
