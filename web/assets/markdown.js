// Markdown for the page, with `marked` as the console has it: the page loads
// marked's own module from the host (/assets/marked.js). The text is
// untrusted: raw HTML is escaped, and links and images stay as written.

/** @param {string} text */
export function escapeHtml(text) {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );
}

/**
 * A renderer of Markdown to HTML on a `Marked` class (marked's module).
 * @param {new (options: object) => { parse(src: string, o: object): string }} Marked
 * @returns {(source: string) => string}
 */
export function markdownRenderer(Marked) {
  const marked = new Marked({
    gfm: true,
    breaks: true,
    renderer: {
      html: (token) => escapeHtml(token.raw ?? token.text ?? ""),
      link: (token) => escapeHtml(token.raw ?? ""),
      image: (token) => escapeHtml(token.raw ?? ""),
    },
  });
  return (source) => marked.parse(source, { async: false }).trim();
}

/**
 * Without marked's module (a host that cannot serve it): the text as written.
 * @param {string} source
 */
export function plainText(source) {
  return `<p class="plain">${escapeHtml(source)}</p>`;
}
