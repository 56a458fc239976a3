/**
 * Which reply is spoken, decided from the daemon's events alone: a `user`
 * event starts a turn (spoken when it is this client's own question, by
 * its ref, or when every reply is); its `token`s are spoken; `done` ends
 * it. A `stop` from any client (`done` with `stopped`), a newer question or
 * `listening {on: true}` silences speech at once; so does another
 * conversation made current, when every reply of the current one is spoken.
 */
import type { Event, Ref } from "../protocol/protocol.ts";
import type { SpeakMode } from "./settings.ts";

/** What {@link TurnFollower} drives: the speaker's four moves. */
export interface SpeechControl {
  begin(): void;
  text(delta: string): void;
  end(): void;
  silence(): void;
}

/** Options of {@link TurnFollower}. */
export interface TurnFollowerOptions {
  speak: SpeakMode;
  /** Whether a ref is one of this client's questions. */
  own: (ref: Ref) => boolean;
}

/** Follows the turns in the event stream and tells the speaker what to do. */
export class TurnFollower {
  readonly #options: TurnFollowerOptions;
  readonly #speech: SpeechControl;
  /** The turn in flight is being spoken. */
  #speaking = false;
  /** The current conversation (null: unsaved), as `hello` and `conversation` say. */
  #current: number | null = null;
  /** The conversation the turn in flight began in. */
  #turnIn: number | null = null;
  /** Another conversation was made current since the turn began. */
  #moved = false;

  /** Creates a follower that drives `speech`. */
  constructor(speech: SpeechControl, options: TurnFollowerOptions) {
    this.#speech = speech;
    this.#options = options;
  }

  /** Whether a turn that `user` starts is spoken. */
  #spoken(ref: Ref | undefined): boolean {
    return this.#options.speak === "all" ||
      (ref !== undefined && this.#options.own(ref));
  }

  /** Acts on one event. */
  follow(event: Event): void {
    switch (event.type) {
      case "user":
        // A newer question ends whatever was said before it.
        this.#turnIn = this.#current;
        this.#moved = false;
        this.#speaking = this.#spoken(event.ref);
        if (this.#speaking) this.#speech.begin();
        else this.#speech.silence();
        break;
      case "token":
        if (this.#speaking) this.#speech.text(event.delta);
        break;
      case "done":
        // A reply saved in the unsaved current conversation gave it its id.
        if (this.#current === null && !this.#moved) this.#current = event.id;
        if (event.stopped) this.#speech.silence();
        else if (this.#speaking) this.#speech.end();
        this.#speaking = false;
        break;
      case "error":
        // A reply that failed: what arrived of it is still said.
        if (event.turn === true && this.#speaking) this.#speech.end();
        if (event.turn === true) this.#speaking = false;
        break;
      case "listening":
        if (event.on) this.silence();
        break;
      case "conversation":
        this.#current = event.id;
        this.#moved = true;
        // A reply goes on where it began; "all" speaks the current
        // conversation's only. An unsaved one is never the same again.
        if (
          this.#speaking && this.#options.speak === "all" &&
          (event.id === null || event.id !== this.#turnIn)
        ) {
          this.silence();
        }
        break;
      case "hello":
        // A new connection: a turn from before it will never end here.
        this.#current = event.id;
        // A reply from before it may belong anywhere.
        this.#moved = true;
        this.silence();
        break;
    }
  }

  /** Ends speech and forgets the turn in flight (the connection is gone). */
  silence(): void {
    this.#speaking = false;
    this.#speech.silence();
  }
}
