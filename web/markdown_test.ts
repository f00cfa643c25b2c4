import assert from "node:assert/strict";
import { renderMarkdown } from "./assets/markdown.js";

Deno.test("markdown: HTML is escaped, links and images stay text", () => {
  assert.equal(renderMarkdown("<script>x</script>"), "<p>&lt;script&gt;x&lt;/script&gt;</p>");
  assert.equal(
    renderMarkdown("![a](http://x/i.png) [b](http://y)"),
    "<p>![a](http://x/i.png) [b](http://y)</p>",
  );
  assert.equal(
    renderMarkdown('`<b onclick="x">`'),
    "<p><code>&lt;b onclick=&quot;x&quot;&gt;</code></p>",
  );
});

Deno.test("markdown: code blocks, emphasis, lists and paragraphs", () => {
  assert.equal(
    renderMarkdown("Hi **there** and *you*.\n\n- one\n- two\n\n```\na < b\n```"),
    "<p>Hi <strong>there</strong> and <em>you</em>.</p><ul><li>one</li><li>two</li></ul>" +
      "<pre><code>a &lt; b</code></pre>",
  );
  assert.equal(renderMarkdown("1. a\n2. b"), "<ol><li>a</li><li>b</li></ol>");
  assert.equal(renderMarkdown("snake_case_name"), "<p>snake_case_name</p>");
});
