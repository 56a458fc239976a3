/**
 * What `check` says of the assistant's knowledge beyond the questions: how
 * many memories it keeps, and whether the embedding server answers and how
 * far the turns' vectors for search by meaning are.
 */
import { DatabaseSync } from "node:sqlite";
import type { Config } from "../base/config.ts";
import type { Paths } from "../base/paths.ts";
import { Embedder } from "../llm/embeddings.ts";
import { DONE_SQL, TOTAL_SQL } from "../store/vectors.ts";
import { type CheckLine, messageOf } from "./check_line.ts";

/** Reads counts from the history file, read-only; null when it has none yet (or not these tables). */
function counted(
  path: string,
  sql: string,
  ...args: (string | number)[]
): number | null {
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { readOnly: true });
  } catch {
    return null;
  }
  try {
    return Number(db.prepare(sql).get(...args)?.n ?? 0);
  } catch {
    return null;
  } finally {
    db.close();
  }
}

/** The memory and embedding lines. */
export async function* knowledgeLines(
  paths: Paths,
  config: Config,
  options: { fetch?: typeof fetch } = {},
): AsyncGenerator<CheckLine> {
  const memories = counted(paths.dbPath, "SELECT count(*) AS n FROM memories");
  const kept = memories === null ? "none kept yet" : `${memories} kept`;
  yield {
    status: "ok",
    subject: "memories",
    message: config.memory === "off"
      ? `${kept}; memory = "off": none is proposed or carried in a request`
      : `${kept}; carried in each new conversation within ${config.memory_tokens} tokens`,
  };
  if (config.embed_url === "") {
    yield {
      status: "ok",
      subject: "embeddings",
      message:
        "search by meaning is off (embed_url is empty): search is by words",
    };
    return;
  }
  const embedder = new Embedder({
    url: config.embed_url,
    model: config.embed_model,
    stallMs: Math.min(config.stall_timeout, 10) * 1000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  let model: string;
  let dim: number;
  try {
    const embedded = await embedder.embed(
      ["ping"],
      AbortSignal.timeout(20_000),
    );
    if (embedded.dim === null) throw new Error("no vector for a word");
    model = embedded.name;
    dim = embedded.dim;
  } catch (error) {
    yield {
      status: "fail",
      subject: "embeddings",
      message: `${
        messageOf(error)
      }: search by meaning waits for it (search by words still works)`,
    };
    return;
  }
  yield {
    status: "ok",
    subject: "embeddings",
    message: `${config.embed_url} answers: model ${model}, ${dim} dimensions`,
  };
  // As the indexer counts.
  const done = counted(paths.dbPath, DONE_SQL, model, dim);
  const total = counted(paths.dbPath, TOTAL_SQL);
  yield {
    status: "ok",
    subject: "indexing",
    message: done === null || total === null
      ? "no turn stored yet"
      : done >= total
      ? `every turn (${total}) has its vector`
      : `${done} of ${total} turns have their vector; the daemon makes the rest in the background`,
  };
}
