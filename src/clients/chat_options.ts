/**
 * What a chat session is made of (the connection, the screen, the line
 * editor, where files come from and go), and the exit codes it ends with.
 */
import type { Renderer } from "./chat_render.ts";
import type { WriteFile } from "./chat_export.ts";
import type { DaemonClient } from "./client.ts";
import type { LineEditor } from "./line_editor.ts";
import { USAGE_EXIT } from "../base/command_line.ts";
import type { FileSource } from "./attachments.ts";
import type { InputLog } from "./chat_history.ts";

/** Exit codes of `chat`. */
export const CHAT_EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  noDaemon: 2,
  usage: USAGE_EXIT,
  interrupted: 130,
});

/** What a chat session draws with and talks to. */
export interface ChatSessionOptions {
  /** The greeted connection. */
  client: DaemonClient;
  renderer: Renderer;
  /** The raw-mode line editor; null when lines come piped (no prompt is drawn). */
  editor: LineEditor | null;
  /** Writes to the screen. */
  out: (text: string) => void;
  /** Writes a fatal message. */
  err: (text: string) => void;
  /** The prompt, styled. */
  prompt: string;
  /** Terminal width, read at each redraw. */
  columns: () => number;
  /** Where `/export N file` puts a relative file; default the working directory. */
  exportDir?: string | null;
  /** Writes an export; default a new file (never over an existing one). */
  writeFile?: WriteFile;
  /** Where `/attach` finds files; default this process's working directory. */
  files?: FileSource;
  /** Keeps typed lines for the next run; absent, they last this run only. */
  inputLog?: InputLog | null;
  /** Wait for a daemon that goes away (the session's `reconnected`) instead of ending. */
  reconnects?: boolean;
}
