/**
 * A question's files made ready before its turn starts, so that a question
 * that cannot be asked is refused to its sender with nothing stored and no
 * turn begun: each file read (converted where its type has a converter),
 * and pictures only for a model that reads them (`/props` says so in
 * `modalities.vision`).
 */
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import type { Attachment } from "../protocol/protocol.ts";
import { type QuestionFile, readFiles, type Reading } from "./attachments.ts";
import type { ModelSource } from "./turn.ts";

/** No converter at all: every file is text, a picture or refused. */
export const NO_CONVERTERS: Reading = {
  converts: () => false,
  convert: () => Promise.reject(new TypeError("No converter is configured")),
};

/** What a question's files are made ready with. */
export interface QuestionOptions {
  llm: ModelSource;
  reading: Reading;
  /** Ends a lookup or a conversion at shutdown. */
  signal: AbortSignal;
  /**
   * Ends a conversion besides: a `stop`, or the asker gone. A converter may
   * run for `tool_timeout`, a lookup only briefly: a lookup under way when
   * `stop` comes ends as it would, and the question is asked.
   */
  converting?: AbortSignal;
}

/** The files read; AssistantError `bad_file`, `convert_failed` or `no_vision` when the question cannot be asked. */
export async function readyFiles(
  files: readonly Attachment[],
  options: QuestionOptions,
): Promise<QuestionFile[]> {
  const { signal, converting } = options;
  const read = await readFiles(
    files,
    options.reading,
    converting ? AbortSignal.any([signal, converting]) : signal,
  );
  await checkVision(read, options);
  return read;
}

/** Refuses pictures for a model that does not read them; a lookup that fails leaves it to the turn, which tells its own error. */
export async function checkVision(
  files: readonly QuestionFile[],
  options: Pick<QuestionOptions, "llm" | "signal">,
): Promise<void> {
  if (!files.some((file) => file.kind === "image")) return;
  let vision: boolean | null;
  try {
    vision = (await options.llm.chooseModel(options.signal)).vision ?? null;
    // What /props said may be from before llama-server restarted with its
    // --mmproj: it is asked again before the question is refused.
    if (vision === false) {
      vision = (await options.llm.chooseModel(options.signal, { fresh: true }))
        .vision ?? null;
    }
  } catch (error) {
    log.info("model lookup before a question with pictures failed", {
      error: describeError(error),
    });
    return;
  }
  if (vision === false) {
    throw new AssistantError(
      "the model in use does not read pictures: start llama-server with its --mmproj",
      { code: "no_vision" },
    );
  }
}
