/**
 * The embeddings endpoint's answers, read. An answer out of shape (no
 * vectors, vectors of different dimensions, numbers that are not finite) is
 * an error, never a vector kept; an error answer that refuses an input
 * rather than failing is a Refusal, for the client to split or cut around.
 */
import { AssistantError } from "../base/errors.ts";
import { isRecord } from "../base/is_record.ts";

/** A refusal of the inputs rather than a failure of the server: the batch is split, a text halved. */
export class Refusal extends Error {
  /** Whether the server said an input is too long; else it refused one outright (an empty one). */
  readonly tooLarge: boolean;
  /** The batch size the refusal named, if it named one. */
  readonly named: number | null;

  /** A refusal, too long or outright, with the batch size it named. */
  constructor(tooLarge: boolean, named: number | null) {
    super(tooLarge ? "an input is too large" : "an input is refused");
    this.tooLarge = tooLarge;
    this.named = named;
  }
}

/** llama-server's messages for an input longer than its batch or its context. */
const TOO_LARGE =
  /too large to process|larger than the max context size|exceeds the available context size/i;
/** Its message for an input that came to no tokens. */
const EMPTY = /input content cannot be empty/i;

/** AssistantError `embed_failed`, its message naming the embedding server. */
export function embedFailed(message: string, cause?: unknown): AssistantError {
  return new AssistantError(`embedding server: ${message}`, {
    code: "embed_failed",
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The Refusal an error answer makes when it refuses an input rather than failing; else null. */
export function refusalIn(status: number, text: string): Refusal | null {
  if (status !== 400 && status !== 500) return null;
  let message = "";
  try {
    const body: unknown = JSON.parse(text);
    const error = isRecord(body) ? body.error : undefined;
    if (isRecord(error) && typeof error.message === "string") {
      message = error.message;
    }
  } catch {
    return null;
  }
  if (TOO_LARGE.test(message)) {
    const named = Number(/batch size: (\d+)/.exec(message)?.[1]);
    return new Refusal(true, named > 0 ? named : null);
  }
  if (status === 400 && EMPTY.test(message)) return new Refusal(false, null);
  return null;
}

/** The vectors of a successful answer to `count` texts, in order, and the model it names; AssistantError `embed_failed` when out of shape. */
export function vectorsIn(
  text: string,
  count: number,
): { name: string | null; vectors: Float32Array[] } {
  let answer: { model?: unknown; data?: unknown };
  try {
    answer = JSON.parse(text);
  } catch (error) {
    throw embedFailed("its answer is not JSON", error);
  }
  const data = Array.isArray(answer?.data) ? answer.data : null;
  if (data === null || data.length !== count) {
    throw embedFailed(
      `it answered ${data?.length ?? "no"} vectors for ${count} texts`,
    );
  }
  const vectors = new Array<Float32Array>(count);
  for (const [position, item] of data.entries()) {
    const { embedding, index } = (item ?? {}) as {
      embedding?: unknown;
      index?: unknown;
    };
    const at = typeof index === "number" ? index : position;
    if (
      !Array.isArray(embedding) || embedding.length === 0 ||
      !embedding.every((x) => typeof x === "number" && Number.isFinite(x)) ||
      at < 0 || at >= count || vectors[at] !== undefined
    ) {
      throw embedFailed("a vector is not a list of finite numbers");
    }
    vectors[at] = Float32Array.from(embedding as number[]);
  }
  if (vectors.some((vector) => vector.length !== vectors[0]!.length)) {
    throw embedFailed("its vectors differ in dimension");
  }
  const name = typeof answer.model === "string" && answer.model !== ""
    ? answer.model
    : null;
  return { name, vectors };
}
