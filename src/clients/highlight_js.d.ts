/**
 * The part of highlight.js the client uses. Its own types reference the DOM
 * library, whose stream types clash with Deno's, so these stand in for them.
 */
declare const hljs: {
  highlight(
    code: string,
    options: { language: string; ignoreIllegals?: boolean },
  ): {
    value: string;
    /** The mode the text ended in; the language's own mode has no parent. */
    _top?: { parent?: unknown };
  };
  getLanguage(name: string): object | undefined;
};
export default hljs;
