/**
 * Tiny random-weight models for a real llama-server: the GPT-2 BPE
 * vocabulary (read from llama.cpp's `ggml-vocab-gpt-2.gguf`) with Qwen's
 * special tokens, a chat template, and a few kilobytes of layers. The text
 * they write is noise; the wire format, the template, the prompt cache and
 * the timings are the real server's.
 *
 * - `qwen3`: a cache that can shift (`n_cache_reuse` works).
 * - `gemma3`: sliding-window attention, so the server cannot shift its cache.
 * - `embed`: a qwen3 without a template, for `--embeddings --pooling mean`.
 */
import { numberArray, readGguf, stringArray } from "./gguf_read.ts";
import { GgufWriter } from "./gguf_write.ts";

/** The kinds of tiny model. */
export type TinyKind = "qwen3" | "gemma3" | "embed";

/** What a tiny model is made of. */
export interface TinyModelOptions {
  kind: TinyKind;
  /** llama.cpp's `models/ggml-vocab-gpt-2.gguf`. */
  vocabPath: string;
  /** The chat template's text (none for `embed`). */
  template?: string;
  /** Seeds the weights: another seed, another model. */
  seed: number;
  /** `general.name`. */
  name: string;
}

/** The ids of the tokens added after GPT-2's 50,257. */
export const SPECIAL_TOKENS = {
  endOfText: 50256,
  imStart: 50257,
  imEnd: 50258,
  think: 50259,
  endThink: 50260,
  toolCall: 50261,
  endToolCall: 50262,
} as const;

/** The sliding window of the `gemma3` model, in tokens. */
export const SLIDING_WINDOW = 256;

const TOKEN_NORMAL = 1;
const TOKEN_CONTROL = 3;
const TOKEN_USER_DEFINED = 4;

const ADDED: [string, number][] = [
  ["<|im_start|>", TOKEN_CONTROL],
  ["<|im_end|>", TOKEN_CONTROL],
  ["<think>", TOKEN_USER_DEFINED],
  ["</think>", TOKEN_USER_DEFINED],
  ["<tool_call>", TOKEN_USER_DEFINED],
  ["</tool_call>", TOKEN_USER_DEFINED],
];

const N_EMBD = 64;
const N_LAYER = 2;
const N_HEAD = 4;
const N_HEAD_KV = 2;
const HEAD_DIM = 16;
const N_FF = 128;
const N_CTX_TRAIN = 4096;

/** A seeded source of normally distributed numbers (mulberry32 and Box-Muller). */
export class Noise {
  #state: number;
  #spare: number | null = null;

  constructor(seed: number) {
    this.#state = (seed * 0x9e3779b9) >>> 0;
  }

  /** A uniform number in (0, 1). */
  uniform(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  }

  /** A standard normal number. */
  normal(): number {
    if (this.#spare !== null) {
      const spare = this.#spare;
      this.#spare = null;
      return spare;
    }
    const r = Math.sqrt(-2 * Math.log(this.uniform()));
    const angle = 2 * Math.PI * this.uniform();
    this.#spare = r * Math.sin(angle);
    return r * Math.cos(angle);
  }

  /** `size` normal numbers times `scale`. */
  fill(size: number, scale = 0.02): Float32Array {
    const out = new Float32Array(size);
    for (let i = 0; i < size; i++) out[i] = this.normal() * scale;
    return out;
  }
}

/** GPT-2's byte-to-character table, inverted: the bytes a BPE token's characters stand for. */
function unicodeToByte(): Map<string, number> {
  const bytes: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bytes.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bytes.push(b);
  for (let b = 0xae; b <= 0xff; b++) bytes.push(b);
  const chars = bytes.slice();
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + extra++);
    }
  }
  return new Map(bytes.map((b, i) => [String.fromCodePoint(chars[i]!), b]));
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The tokens a random model must not pick on its own: every special token,
 * and every byte-level token whose bytes are not valid UTF-8 alone (a part
 * of a multi-byte character). Sampled mid-reply, those make the reply
 * invalid UTF-8, and llama-server's final chat parse then fails the stream.
 */
export function suppressedTokens(tokens: string[], types: number[]): number[] {
  const table = unicodeToByte();
  const out: number[] = [];
  for (const [id, token] of tokens.entries()) {
    if (types[id] !== TOKEN_NORMAL) {
      out.push(id);
      continue;
    }
    const bytes = Uint8Array.from(token, (c) => table.get(c) ?? 0x3f);
    try {
      strictUtf8.decode(bytes);
    } catch {
      out.push(id);
    }
  }
  return out;
}

/** The GPT-2 vocabulary with the added tokens: tokens, their types, the merges. */
export async function tinyVocab(
  vocabPath: string,
): Promise<{ tokens: string[]; types: number[]; merges: string[] }> {
  const vocab = await readGguf(vocabPath);
  const tokens = stringArray(vocab, "tokenizer.ggml.tokens").slice();
  const types = numberArray(vocab, "tokenizer.ggml.token_type").slice();
  const merges = stringArray(vocab, "tokenizer.ggml.merges");
  if (tokens.length !== SPECIAL_TOKENS.imStart) {
    throw new RangeError(`expected GPT-2's 50257 tokens, got ${tokens.length}`);
  }
  for (const [token, type] of ADDED) {
    tokens.push(token);
    types.push(type);
  }
  return { tokens, types, merges };
}

/** Builds a tiny model's GGUF. */
export async function tinyModel(
  options: TinyModelOptions,
): Promise<GgufWriter> {
  const { tokens, types, merges } = await tinyVocab(options.vocabPath);
  const arch = options.kind === "gemma3" ? "gemma3" : "qwen3";
  const w = new GgufWriter();
  w.string("general.architecture", arch);
  w.string("general.name", options.name);
  w.u32(`${arch}.context_length`, N_CTX_TRAIN);
  w.u32(`${arch}.embedding_length`, N_EMBD);
  w.u32(`${arch}.block_count`, N_LAYER);
  w.u32(`${arch}.feed_forward_length`, N_FF);
  w.u32(`${arch}.attention.head_count`, N_HEAD);
  w.u32(`${arch}.attention.head_count_kv`, N_HEAD_KV);
  w.u32(`${arch}.attention.key_length`, HEAD_DIM);
  w.u32(`${arch}.attention.value_length`, HEAD_DIM);
  w.u32(`${arch}.rope.dimension_count`, HEAD_DIM);
  w.f32(`${arch}.rope.freq_base`, 1_000_000);
  w.f32(`${arch}.attention.layer_norm_rms_epsilon`, 1e-6);
  if (arch === "gemma3") {
    // Layer 0 slides, layer 1 sees everything: as Gemma 3's 5:1, in two layers.
    w.u32(`${arch}.attention.sliding_window`, SLIDING_WINDOW);
    w.u32(`${arch}.attention.sliding_window_pattern`, 2);
  }
  w.u32("general.file_type", 0); // all F32
  w.string("tokenizer.ggml.model", "gpt2");
  w.string("tokenizer.ggml.pre", "gpt-2");
  w.strings("tokenizer.ggml.tokens", tokens);
  w.i32s("tokenizer.ggml.token_type", types);
  w.strings("tokenizer.ggml.merges", merges);
  w.u32("tokenizer.ggml.eos_token_id", SPECIAL_TOKENS.imEnd);
  w.u32("tokenizer.ggml.eot_token_id", SPECIAL_TOKENS.imEnd);
  w.u32("tokenizer.ggml.padding_token_id", SPECIAL_TOKENS.endOfText);
  w.u32("tokenizer.ggml.bos_token_id", SPECIAL_TOKENS.endOfText);
  w.bool("tokenizer.ggml.add_bos_token", false);
  if (options.template !== undefined) {
    w.string("tokenizer.chat_template", options.template);
  }
  addTensors(
    w,
    arch,
    tokens.length,
    suppressedTokens(tokens, types),
    options.seed,
  );
  return w;
}

/** Writes a tiny model to `path`. */
export async function writeTinyModel(
  path: string,
  options: TinyModelOptions,
): Promise<void> {
  await (await tinyModel(options)).write(path);
}

function addTensors(
  w: GgufWriter,
  arch: "qwen3" | "gemma3",
  nVocab: number,
  suppress: number[],
  seed: number,
): void {
  const noise = new Noise(seed);
  const matrix = (name: string, rows: number, cols: number) =>
    w.tensor(name, [cols, rows], noise.fill(rows * cols));
  const constant = (name: string, size: number, value: number) =>
    w.tensor(name, [size], new Float32Array(size).fill(value));
  // The suppression works through dimension 0: every token's embedding has
  // a constant 1 there, so the final normed state's dimension 0 is large
  // and positive, and an output row with -3 there gives its token a logit
  // far below every other (about -24). logit_bias, a grammar or the
  // reasoning budget still select such a token when they force it.
  const embedding = noise.fill(nVocab * N_EMBD);
  for (let t = 0; t < nVocab; t++) embedding[t * N_EMBD] = 1;
  w.tensor("token_embd.weight", [N_EMBD, nVocab], embedding);
  constant("output_norm.weight", N_EMBD, 1);
  const output = noise.fill(nVocab * N_EMBD);
  for (let t = 0; t < nVocab; t++) output[t * N_EMBD] = 0;
  for (const t of suppress) output[t * N_EMBD] = -3;
  // The end of a turn only mildly: never among the top 40 by itself, but a
  // logit_bias of +100 on it still wins over another biased token.
  output[SPECIAL_TOKENS.imEnd * N_EMBD] = -1;
  w.tensor("output.weight", [N_EMBD, nVocab], output);
  for (let i = 0; i < N_LAYER; i++) {
    const blk = `blk.${i}`;
    constant(`${blk}.attn_norm.weight`, N_EMBD, 1);
    matrix(`${blk}.attn_q.weight`, N_HEAD * HEAD_DIM, N_EMBD);
    matrix(`${blk}.attn_k.weight`, N_HEAD_KV * HEAD_DIM, N_EMBD);
    matrix(`${blk}.attn_v.weight`, N_HEAD_KV * HEAD_DIM, N_EMBD);
    matrix(`${blk}.attn_output.weight`, N_EMBD, N_HEAD * HEAD_DIM);
    constant(`${blk}.attn_q_norm.weight`, HEAD_DIM, 1);
    constant(`${blk}.attn_k_norm.weight`, HEAD_DIM, 1);
    constant(`${blk}.ffn_norm.weight`, N_EMBD, 1);
    matrix(`${blk}.ffn_gate.weight`, N_FF, N_EMBD);
    matrix(`${blk}.ffn_up.weight`, N_FF, N_EMBD);
    matrix(`${blk}.ffn_down.weight`, N_EMBD, N_FF);
    if (arch === "gemma3") {
      // Gemma normalises each sublayer's output before the residual: small
      // weights keep those from drowning dimension 0.
      constant(`${blk}.post_attention_norm.weight`, N_EMBD, 0.05);
      constant(`${blk}.post_ffw_norm.weight`, N_EMBD, 0.05);
    }
  }
}
