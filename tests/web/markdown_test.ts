/**
 * The page's Markdown (web/markdown.js) as HTML: code blocks highlighted
 * under their language with a copy button, task lists as disabled
 * checkboxes, and still no raw HTML from the model.
 */
import assert from "node:assert/strict";
import { renderMarkdown } from "../../web/markdown.js";

Deno.test("a fenced block of a known language is highlighted, labelled and has a copy button", () => {
  const html = renderMarkdown("```python\ndef f(x):\n    return x\n```\n");
  assert.match(html, /<span class="code-lang">python<\/span>/);
  assert.match(html, /<button type="button" class="copy"/);
  assert.match(html, /<code class="hljs language-python">/);
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
});

Deno.test("a block without a language, or an unknown one, is escaped text under its label", () => {
  const plain = renderMarkdown("```\n<script>alert(1)</script>\n```\n");
  assert.match(plain, /<span class="code-lang">text<\/span>/);
  assert.match(plain, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.doesNotMatch(plain, /<script>/);
  const odd = renderMarkdown('```"><img src=x>\nx\n```\n');
  assert.doesNotMatch(odd, /<img/);
  assert.match(odd, /<code class="hljs">x/);
});

Deno.test("task list items are disabled checkboxes, checked for [x]", () => {
  const html = renderMarkdown("- [x] done **well**\n- [ ] to do\n- plain\n");
  assert.match(
    html,
    /<li class="task-item"><input type="checkbox" class="task-box" disabled checked aria-label="done"> done <strong>well<\/strong><\/li>/,
  );
  assert.match(
    html,
    /<li class="task-item"><input type="checkbox" class="task-box" disabled aria-label="to do"> to do<\/li>/,
  );
  assert.match(html, /<li>plain<\/li>/);
  assert.doesNotMatch(html, /\[x\]|\[ \]/);
  // Not at an item's start: left as text.
  assert.match(renderMarkdown("a [x] b\n"), /a \[x\] b/);
});

Deno.test("a code block still streaming is drawn plain, and highlighted once it closes", () => {
  const open = renderMarkdown("Look:\n\n```ts\nconst x = 1;\n", { open: true });
  assert.match(open, /<code class="hljs">const x = 1;/);
  assert.doesNotMatch(open, /hljs-keyword/);
  assert.match(open, /<span class="code-lang">ts<\/span>/);
  const closed = renderMarkdown("Look:\n\n```ts\nconst x = 1;\n```\n", {
    open: false,
  });
  assert.match(closed, /<span class="hljs-keyword">const<\/span>/);
  // Only the last block can still be streaming: one before it is highlighted.
  const two = renderMarkdown("```ts\nlet a;\n```\n\n```ts\nlet b\n", {
    open: true,
  });
  assert.equal(two.match(/hljs-keyword/g)?.length, 1);
});
