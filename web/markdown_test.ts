import assert from "node:assert/strict";
import { Marked } from "marked";
import { markdownRenderer, plainText } from "./assets/markdown.js";

const renderMarkdown = markdownRenderer(Marked);

Deno.test("markdown: HTML is escaped, links and images stay text", () => {
  assert.equal(renderMarkdown("<script>x</script>"), "&lt;script&gt;x&lt;/script&gt;");
  assert.equal(renderMarkdown("a <b onclick=x>b</b>"), "<p>a &lt;b onclick=x&gt;b&lt;/b&gt;</p>");
  assert.equal(
    renderMarkdown("![a](http://x/i.png) [b](http://y)"),
    "<p>![a](http://x/i.png) [b](http://y)</p>",
  );
  assert.equal(
    renderMarkdown('`<b onclick="x">`'),
    "<p><code>&lt;b onclick=&quot;x&quot;&gt;</code></p>",
  );
  assert.equal(plainText("<b>"), '<p class="plain">&lt;b&gt;</p>');
});

Deno.test("markdown: code blocks, emphasis, lists, tables and paragraphs, as marked draws them", () => {
  const html = renderMarkdown("Hi **there** and *you*.\n\n- one\n- two\n\n```\na < b\n```");
  assert.match(html, /<p>Hi <strong>there<\/strong> and <em>you<\/em>\.<\/p>/);
  assert.match(html, /<ul>\s*<li>one<\/li>\s*<li>two<\/li>\s*<\/ul>/);
  assert.match(html, /<pre><code>a &lt; b\n?<\/code><\/pre>/);
  assert.match(renderMarkdown("1. a\n2. b"), /<ol>\s*<li>a<\/li>\s*<li>b<\/li>\s*<\/ol>/);
  assert.equal(renderMarkdown("snake_case_name"), "<p>snake_case_name</p>");
  assert.match(renderMarkdown("| a | b |\n|---|---|\n| 1 | 2 |"), /<table>[\s\S]*<td>2<\/td>/);
});
