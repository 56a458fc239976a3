/**
 * Each input of the embeddings endpoint kept within what the server takes at
 * once. A mean-pooled embedding model cannot split an input across batches,
 * so llama-server refuses any input longer than its physical batch
 * (`n_ubatch`, 512 tokens unless set) with a 500 "input (N tokens) is too
 * large to process", which fails the whole request. So each input is cut to
 * that many tokens by an estimate that errs high (`cutToTokens`), and a text
 * the server still refuses on its own is halved.
 */
import { isRecord } from "../base/is_record.ts";

/** Tokens of one input when the server does not say: llama-server's default physical batch. */
const DEFAULT_TOKENS = 512;
/** Tokens kept free beside the text: the model's own BOS, EOS or separator. */
const SPECIAL_TOKENS = 8;

/** What `/props` told of the server, once it answered. */
export interface Props {
  /** Tokens one input may have. */
  tokens: number;
  /** The model's file, as the server names it; null when it does not. */
  path: string | null;
}

/** The props of a server that did not answer `/props`: the default batch, no model file. */
export function unknownProps(): Props {
  return { tokens: DEFAULT_TOKENS, path: null };
}

/** What an answer of `/props` says, whatever its status; the defaults where it says nothing. */
export function readProps(status: number, text: string): Props {
  let props: Record<string, unknown> = {};
  try {
    const parsed: unknown = status < 400 ? JSON.parse(text) : null;
    if (isRecord(parsed)) props = parsed;
  } catch {
    // A server without /props, or an answer out of shape: the defaults.
  }
  // The physical batch bounds one input; the slot's context too.
  let tokens = sizeOf(props, "n_ubatch") ?? sizeOf(props, "n_batch") ??
    DEFAULT_TOKENS;
  tokens = Math.min(tokens, sizeOf(props, "n_ctx") ?? Infinity);
  const path = typeof props.model_path === "string" && props.model_path !== ""
    ? props.model_path
    : null;
  return { tokens, path };
}

/** `text` cut to the tokens one input may have, by `/props` and by a smaller batch size a refusal `named`. */
export function fitInput(
  text: string,
  props: Props,
  named: number | null,
): string {
  const tokens = Math.min(props.tokens, named ?? Infinity);
  return cutToTokens(text, Math.max(1, tokens - SPECIAL_TOKENS));
}

/**
 * `text` cut to about `tokens` tokens by an estimate that errs high for
 * most text: a code point counts as many tokens as its UTF-8 bytes (a
 * byte-level tokenizer makes no more), except a Latin letter or a space,
 * which counts half (words take two or more of them a token). Denser text
 * (a letter between stops, a token each) may come out longer: the server
 * refuses it, and it is halved.
 */
export function cutToTokens(text: string, tokens: number): string {
  let cost = 0;
  let at = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    cost += code === 32 || (code | 32) >= 97 && (code | 32) <= 122
      ? 0.5
      : code < 0x80
      ? 1
      : code < 0x800
      ? 2
      : code < 0x10000
      ? 3
      : 4;
    if (cost > tokens) return text.slice(0, at);
    at += char.length;
  }
  return text;
}

/** The first half of a text, never splitting a surrogate pair. */
export function halve(text: string): string {
  let half = text.length >> 1;
  const last = text.charCodeAt(half - 1);
  if (last >= 0xd800 && last <= 0xdbff) half--;
  return text.slice(0, half);
}

/** A positive integer of `props` or its `default_generation_settings`, or null. */
function sizeOf(props: Record<string, unknown>, key: string): number | null {
  const settings = props.default_generation_settings;
  for (const value of [props[key], isRecord(settings) && settings[key]]) {
    if (Number.isSafeInteger(value) && (value as number) > 0) {
      return value as number;
    }
  }
  return null;
}
