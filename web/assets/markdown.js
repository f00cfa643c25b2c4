// Markdown for the chat, as untrusted text: HTML is escaped, and links and
// images stay text. Code blocks, inline code, emphasis, headings and lists.

/** @param {string} text */
export function escapeHtml(text) {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );
}

/** @param {string} text an escaped line */
function inline(text) {
  return text
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_([^_\s][^_]*)_(?!\w)/g, "$1<em>$2</em>");
}

/**
 * The HTML of a message.
 * @param {string} source
 * @returns {string}
 */
export function renderMarkdown(source) {
  const out = [];
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let paragraph = [];
  /** @type {"ul" | "ol" | null} */
  let list = null;
  const flush = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
    paragraph = [];
  };
  const closeList = () => {
    if (list) out.push(`</${list}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*```/.exec(line);
    if (fence) {
      flush();
      closeList();
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      out.push(`<pre><code>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const escaped = escapeHtml(line);
    const heading = /^(#{1,6})\s+(.*)$/.exec(escaped);
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(escaped);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(escaped);
    if (line.trim() === "") {
      flush();
      closeList();
    } else if (heading) {
      flush();
      closeList();
      out.push(`<p><strong>${inline(heading[2])}</strong></p>`);
    } else if (bullet || numbered) {
      flush();
      const kind = bullet ? "ul" : "ol";
      if (list !== kind) {
        closeList();
        out.push(`<${kind}>`);
        list = kind;
      }
      out.push(`<li>${inline((bullet ?? numbered)[1])}</li>`);
    } else {
      closeList();
      paragraph.push(escaped);
    }
  }
  flush();
  closeList();
  return out.join("");
}
