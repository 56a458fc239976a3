/**
 * The saved conversations as commands reach them: listed, opened, searched,
 * exported, renamed and deleted. What the current conversation and the reply
 * in flight must do about it stays with the assistant.
 */
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import { fuse } from "./fusion.ts";
import type { Meaning } from "./meaning.ts";
import {
  DEFAULT_LIST_LIMIT,
  type Event,
  type ExportFormat,
  type Ref,
  refField,
  type SearchBy,
} from "../protocol/protocol.ts";
import type { SearchHit, Store } from "../store/store.ts";
import type { Conversation } from "./conversation.ts";
import type { Conversations } from "./conversations.ts";
import { exportText } from "./export.ts";
import type { Titler } from "./title.ts";

/** Where `search` runs: the store itself, or a worker with its own connection. */
export interface Searcher {
  search(q: string, limit: number): Promise<SearchHit[]> | SearchHit[];
}

/** What the archive needs. */
export interface ArchiveOptions {
  store: Store;
  /** The conversations in memory, one object per id. */
  conversations: Conversations;
  searcher: Searcher | undefined;
  /** Search by meaning; null when `embed_url` is empty. */
  meaning: Pick<Meaning, "search" | "available"> | null;
  /** A title the model is still writing gives way to a rename or a delete. */
  titles: Pick<Titler, "cancel">;
  emit: (event: Event) => void;
}

/** The saved conversations, each command's answer or error. */
export class Archive {
  readonly #o: ArchiveOptions;

  /** An archive over the store. */
  constructor(options: ArchiveOptions) {
    this.#o = options;
  }

  /** The newest conversations, as `conversations`. */
  list(limit = DEFAULT_LIST_LIMIT): Event {
    return { type: "conversations", items: this.#o.store.list(limit) };
  }

  /** A saved conversation to make current: the one in memory, if any. */
  open(id: number): Conversation {
    return this.#o.conversations.open(id);
  }

  /**
   * The search's hits, as `results`: by words, by meaning, or both fused
   * (the default with embeddings on); an embedding server that fails, or is
   * known to be down, leaves `both` to words alone. At most `limit`;
   * `exclude` leaves one conversation out.
   */
  async search(
    q: string,
    limit: number,
    by?: SearchBy,
    exclude: number | null = null,
  ): Promise<Event> {
    const { meaning } = this.#o;
    const mode = by ?? (meaning ? "both" : "words");
    if (mode === "meaning" && !meaning) {
      throw new AssistantError(
        "search by meaning is off: set embed_url to an embeddings endpoint",
        { code: "meaning_off" },
      );
    }
    const searcher = this.#o.searcher ?? this.#o.store;
    // One more asked when one may be left out.
    const byWords = async () =>
      (await searcher.search(q, limit + (exclude === null ? 0 : 1)))
        .filter((hit) => hit.id !== exclude).slice(0, limit);
    // Without search by meaning, results are as they always were.
    if (!meaning) return { type: "results", items: await byWords() };
    if (mode === "words") {
      return { type: "results", items: fuse(await byWords(), [], limit) };
    }
    if (mode === "meaning") {
      const found = await meaning.search(q, limit, exclude);
      return { type: "results", items: fuse([], found, limit) };
    }
    if (!meaning.available) {
      return { type: "results", items: fuse(await byWords(), [], limit) };
    }
    const [words, found] = await Promise.all([
      byWords(),
      meaning.search(q, limit, exclude).catch((error) => {
        log.info("search by meaning failed: by words alone", {
          error: describeError(error),
        });
        return [];
      }),
    ]);
    return { type: "results", items: fuse(words, found, limit) };
  }

  /** A stored turn's file with its bytes, as `file`; `no_such_file` when there is none. */
  file(conversation: number, turn: number, index: number): Event {
    const found = this.#o.store.fileAt(conversation, turn, index);
    if (!found) {
      throw new AssistantError("no such file", { code: "no_such_file" });
    }
    return {
      type: "file",
      conversation,
      turn,
      index,
      name: found.name,
      mime: found.mime,
      data: found.data.toBase64(),
    };
  }

  /** A conversation in an export format, as `export`. */
  export(id: number, format: ExportFormat): Event {
    const record = this.#o.store.record(id);
    if (!record) {
      throw new AssistantError("no such conversation", {
        code: "no_such_conversation",
      });
    }
    return { type: "export", id, format, text: exportText(record, format) };
  }

  /** Renames a conversation and tells every client. */
  rename(id: number, title: string, ref: Ref | undefined): void {
    if (!this.#o.store.rename(id, title)) {
      throw new AssistantError("no such conversation", {
        code: "no_such_conversation",
      });
    }
    // The user's title wins over one the model is still writing.
    this.#o.titles.cancel(id);
    log.info("conversation renamed", { conv: id, chars: title.length });
    this.#o.emit({ type: "renamed", id, title, ...refField(ref) });
  }

  /** Deletes a conversation with its title request, if one is waiting; returns its object in memory, discarded, if there was one. */
  delete(id: number): Conversation | null {
    const gone = this.#o.conversations.delete(id);
    this.#o.titles.cancel(id);
    return gone;
  }
}
