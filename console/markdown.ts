/**
 * The agent's answers in a terminal: Markdown (read by `marked`'s lexer)
 * drawn with the terminal's own means: bold headings, coloured code, bullets,
 * numbered lists, quotes, aligned tables, links with their address.
 *
 * Without colours the text is given back as the agent wrote it: Markdown is
 * made to read as plain text, and a file or a pipe then gets exactly that.
 *
 * @module
 */
import { marked, type Token, type Tokens } from "marked";
import pc from "picocolors";

/** Options of {@linkcode renderMarkdown}. */
export interface MarkdownOptions {
  /** Draw with colours and emphasis; without them the text is returned as written. */
  colors: boolean;
  /** The width of a rule (`---`); default 40. */
  width?: number;
}

type Colors = ReturnType<typeof pc.createColors>;

/**
 * Renders Markdown for a terminal. The result has no final newline.
 *
 * @example
 * ```ts
 * renderMarkdown("# Plan\n\n- build `notes`\n- test it", { colors: true });
 * // a bold "Plan", then "• build notes" (notes in cyan) and "• test it"
 * ```
 */
export function renderMarkdown(text: string, options: MarkdownOptions): string {
  if (!options.colors) return text.replace(/\s+$/, "");
  const c = pc.createColors(true);
  const width = options.width ?? 40;
  let tokens: Token[];
  try {
    tokens = marked.lexer(text);
  } catch {
    return text.replace(/\s+$/, ""); // text the lexer cannot read is shown as it came
  }
  return blocks(tokens, c, width).join("\n").replace(/\s+$/, "");
}

/** Block tokens as lines, one empty line between blocks. */
function blocks(tokens: Token[], c: Colors, width: number): string[] {
  const out: string[] = [];
  for (const token of tokens) {
    const lines = block(token, c, width);
    if (lines === null) continue;
    if (out.length > 0) out.push("");
    out.push(...lines);
  }
  return out;
}

/** One block token as lines; null for what takes no room (blank space). */
function block(token: Token, c: Colors, width: number): string[] | null {
  switch (token.type) {
    case "space":
      return null;
    case "heading": {
      const t = token as Tokens.Heading;
      const text = inline(t.tokens, c);
      return [t.depth <= 2 ? c.bold(c.underline(text)) : c.bold(text)];
    }
    case "paragraph":
      return inline((token as Tokens.Paragraph).tokens, c).split("\n");
    case "text": {
      const t = token as Tokens.Text;
      return (t.tokens ? inline(t.tokens, c) : t.text).split("\n");
    }
    case "code": {
      const t = token as Tokens.Code;
      const lines = t.text.split("\n").map((line) => `  ${c.cyan(line)}`);
      return t.lang ? [c.dim(`  ${t.lang}`), ...lines] : lines;
    }
    case "list":
      return list(token as Tokens.List, c, width);
    case "blockquote":
      return blocks((token as Tokens.Blockquote).tokens, c, width).map((l) => `${c.dim("│")} ${l}`);
    case "hr":
      return [c.dim("─".repeat(width))];
    case "table":
      return table(token as Tokens.Table, c);
    case "html":
      return (token as Tokens.HTML).text.replace(/\n$/, "").split("\n");
    default:
      return "raw" in token && typeof token.raw === "string"
        ? token.raw.replace(/\n+$/, "").split("\n")
        : null;
  }
}

/** A list: `•` or the number, items' further lines under their text. */
function list(token: Tokens.List, c: Colors, width: number): string[] {
  const start = typeof token.start === "number" ? token.start : 1;
  const marks = token.items.map((_, i) => token.ordered ? `${start + i}.` : "•");
  const markWidth = Math.max(...marks.map((m) => m.length));
  const out: string[] = [];
  token.items.forEach((item, i) => {
    const body = item.tokens.filter((t) => t.type !== "checkbox");
    let lines = token.loose || item.loose ? blocks(body, c, width) : tight(body, c, width);
    if (item.task) {
      lines = [`${item.checked ? "[x]" : "[ ]"} ${lines[0] ?? ""}`, ...lines.slice(1)];
    }
    const mark = token.ordered ? marks[i].padStart(markWidth) : c.dim(marks[i]);
    const pad = " ".repeat(markWidth + 1);
    lines.forEach((line, j) => out.push(j === 0 ? `${mark} ${line}` : line ? `${pad}${line}` : ""));
  });
  return out;
}

/** The blocks of a tight list item: no empty line between its text and a nested list. */
function tight(tokens: Token[], c: Colors, width: number): string[] {
  return tokens.flatMap((t) => block(t, c, width) ?? []);
}

/** A table with aligned columns and a bold header. */
function table(token: Tokens.Table, c: Colors): string[] {
  const header = token.header.map((cell) => inline(cell.tokens, c));
  const rows = token.rows.map((row) => row.map((cell) => inline(cell.tokens, c)));
  const widths = header.map((h, i) =>
    Math.max(visibleLength(h), ...rows.map((r) => visibleLength(r[i] ?? "")))
  );
  const line = (cells: string[]) =>
    cells.map((cell, i) => {
      const pad = " ".repeat(Math.max(0, widths[i] - visibleLength(cell)));
      return token.align[i] === "right" ? pad + cell : cell + pad;
    }).join("  ").trimEnd();
  return [
    c.bold(line(header)),
    c.dim(widths.map((w) => "─".repeat(w)).join("  ")),
    ...rows.map(line),
  ];
}

/** Inline tokens as one string (it may hold newlines from hard breaks). */
function inline(tokens: Token[] | undefined, c: Colors): string {
  if (!tokens) return "";
  return tokens.map((token) => {
    switch (token.type) {
      case "strong":
        return c.bold(inline((token as Tokens.Strong).tokens, c));
      case "em":
        return c.italic(inline((token as Tokens.Em).tokens, c));
      case "del":
        return c.strikethrough(inline((token as Tokens.Del).tokens, c));
      case "codespan":
        return c.cyan((token as Tokens.Codespan).text);
      case "br":
        return "\n";
      case "link": {
        const t = token as Tokens.Link;
        const text = inline(t.tokens, c);
        const shown = text === t.href || `mailto:${text}` === t.href;
        return shown ? c.underline(text) : `${c.underline(text)} ${c.dim(`(${t.href})`)}`;
      }
      case "image": {
        const t = token as Tokens.Image;
        return `${c.dim("[image")} ${t.text}${c.dim(`] (${t.href})`)}`;
      }
      case "escape":
        return (token as Tokens.Escape).text;
      case "text": {
        const t = token as Tokens.Text;
        return t.tokens ? inline(t.tokens, c) : t.text;
      }
      default:
        return "raw" in token && typeof token.raw === "string" ? token.raw : "";
    }
  }).join("");
}

/** The length of a text as the terminal shows it: colour codes take no room. */
export function visibleLength(text: string): number {
  // deno-lint-ignore no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, "").length;
}
