//! Long text as the model reads it: pages of whole lines from the top, each
//! ending with the exact line where the next one starts, counted in the whole
//! text. A model given a piece cut in its middle, or numbers counted from the
//! piece, loses requests finding its way back.

/// The most bytes of one page (about 8,000 tokens): a whole file or result up
/// to this size comes back as it is.
pub const PAGE_BYTES: usize = 32 * 1024;

/// The lines of a text that one page shows.
#[derive(Debug, PartialEq)]
pub struct Page {
    /// Whole lines, exactly as in the text (a line longer than a page alone is cut, with a note).
    pub text: String,
    /// The first line shown, from 1.
    pub first: usize,
    /// The last line shown (`first - 1` when none).
    pub last: usize,
    /// The text's lines.
    pub total: usize,
}

impl Page {
    /// Whether lines after this page remain.
    pub fn more(&self) -> bool {
        self.last < self.total
    }

    /// The page's range for a person: `lines 1-412 of 806`.
    pub fn range(&self) -> String {
        if self.last < self.first {
            format!("no lines of {}", self.total)
        } else {
            format!("lines {}-{} of {}", self.first, self.last, self.total)
        }
    }
}

/// Lines `offset..` (from 1) of `text`, at most `limit` lines and `budget` bytes, whole lines
/// only. A first line longer than the budget is shown cut with a note, so every page moves on.
pub fn page(text: &str, offset: usize, limit: usize, budget: usize) -> Page {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    let first = offset.max(1);
    let mut out = String::new();
    let mut last = first - 1;
    for line in lines.iter().skip(first - 1).take(limit.max(1)) {
        if out.len() + line.len() > budget {
            if out.is_empty() {
                let cut = line.floor_char_boundary(budget.saturating_sub(200));
                out.push_str(&line[..cut]);
                out.push_str(&format!(
                    "\n[… line {first} is {} bytes long; its first {cut} bytes are shown]\n",
                    line.len()
                ));
                last = first;
            }
            break;
        }
        out.push_str(line);
        last += 1;
    }
    Page { text: out, first, last, total }
}

/// The page's text, then, when more lines remain, the line that says how to go on:
/// `[lines 1-412 of 806 shown; the next page: read_file with offset 413]` (`how` names the tool
/// and its path when the text is not a file the model asked for).
pub fn with_next(page: &Page, how: &str) -> String {
    let mut out = page.text.clone();
    if page.more() {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[{} shown; the next page: {how} with offset {}]\n", page.range(), page.last + 1));
    }
    out
}

/// The headings of a Markdown text with their lines, outside code blocks: the contents that a
/// long document's first page starts with, so that a model reads the sections it needs.
pub fn outline(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') && line.trim_start_matches('#').starts_with(' ') {
            out.push((i + 1, line.trim_end().to_string()));
        }
    }
    out
}

/// The contents block of a long Markdown file: `line  heading`, one a line.
pub fn contents(text: &str, total: usize) -> String {
    let headings = outline(text);
    if headings.is_empty() {
        return String::new();
    }
    let mut out = format!("[contents of this {total}-line file: the line where each section starts]\n");
    for (line, heading) in headings {
        out.push_str(&format!("{line:>5}  {heading}\n"));
    }
    out.push_str("[the file from line 1:]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn pages_are_whole_lines_and_say_where_the_next_starts() {
        let text = numbered(100);
        let p = page(&text, 1, 2000, 60);
        assert_eq!(p.text, "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n");
        assert_eq!((p.first, p.last, p.total), (1, 8, 100));
        assert!(with_next(&p, "read_file").ends_with("[lines 1-8 of 100 shown; the next page: read_file with offset 9]\n"));
        // the next page starts where the last ended, counted in the whole text
        let q = page(&text, 9, 2000, 60);
        assert!(q.text.starts_with("line 9\n"));
        // read page after page, the text comes back whole
        let (mut all, mut at) = (String::new(), 1);
        loop {
            let p = page(&text, at, 2000, 100);
            all.push_str(&p.text);
            if !p.more() {
                break;
            }
            at = p.last + 1;
        }
        assert_eq!(all, text);
        // a limit of lines, and the end of the text
        let p = page(&text, 99, 5, 1000);
        assert_eq!((p.last, p.more()), (100, false));
        assert_eq!(with_next(&p, "read_file"), "line 99\nline 100\n");
        let p = page(&text, 500, 5, 1000);
        assert_eq!((p.text.as_str(), p.range()), ("", "no lines of 100".to_string()));
    }

    #[test]
    fn a_line_longer_than_a_page_is_cut_and_passed() {
        let text = format!("short\n{}\nafter\n", "x".repeat(5000));
        let p = page(&text, 2, 2000, 1000);
        assert_eq!((p.first, p.last), (2, 2));
        assert!(p.text.contains("line 2 is 5001 bytes long"), "{}", p.text);
        assert_eq!(page(&text, 3, 2000, 1000).text, "after\n");
    }

    #[test]
    fn contents_of_markdown() {
        let text = "# Title\n\nintro\n## 1. One\n```\n# not a heading\n```\n### 1.1 Deeper\n#hashtag\n";
        assert_eq!(outline(text), vec![(1, "# Title".into()), (4, "## 1. One".into()), (8, "### 1.1 Deeper".into())]);
        assert!(contents(text, 9).contains("    4  ## 1. One\n"));
    }
}
