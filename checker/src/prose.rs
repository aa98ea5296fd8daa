//! Intervals quoted in prose that no Output block prints.
//!
//! The book reads every result off a block's output, and an interval, `[low, high]`, is the
//! number a reading leans on most. `--refresh` rewrites the outputs but never the prose, so a
//! rerun that moves an interval leaves the text quoting the run before it, silently. Every
//! interval in a chapter's prose (outside code blocks, recorded outputs and HTML comments, math
//! included) must therefore be one that some recorded output of the book prints, in any
//! chapter: a reading may quote an earlier chapter's result. Signs, spaces, `$` and the Unicode
//! minus do not count. An interval the text calls approximate ("about [0.17, 0.22]") may be a
//! printed one rounded to the digits it shows.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use tangle::book::{html_comments, Book, CodeBlock, LineIndex};

/// An interval in a chapter's prose that no recorded output prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnprintedInterval {
    pub path: PathBuf,
    pub line: usize,
    /// As the prose writes it.
    pub quoted: String,
}

impl fmt::Display for UnprintedInterval {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{}:{}: the prose quotes the interval {}, which no Output block of the book prints \
             (a number left from before a refresh?): quote what a block prints",
            self.path.display(),
            self.line,
            self.quoted
        )
    }
}

/// An interval found in text: its byte range there, and its two ends as written, normalized
/// (no sign `+`, ASCII minus).
struct Found {
    range: std::ops::Range<usize>,
    ends: (String, String),
}

/// Every `[a, b]` in `text` whose ends are decimal numbers (`0.172`, `-0.040`, `+0.3`), with
/// spaces, `$` and `+` allowed around them; `[1]` or `[a, b]` of words are not intervals.
fn intervals(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    for (open, _) in text.match_indices('[') {
        let Some(close) = text[open..].find(']').map(|k| open + k) else { continue };
        if close - open > 48 {
            continue;
        }
        let inner: String = text[open + 1..close]
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '$' && *c != '+')
            .map(|c| if c == '\u{2212}' { '-' } else { c })
            .collect();
        let Some((low, high)) = inner.split_once(',') else { continue };
        if is_decimal(low) && is_decimal(high) {
            found.push(Found { range: open..close + 1, ends: (low.to_string(), high.to_string()) });
        }
    }
    found
}

/// `-?digits.digits`
fn is_decimal(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    match digits.split_once('.') {
        Some((a, b)) => {
            !a.is_empty() && !b.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

/// `x` rounded to the number of decimals `like` shows, written as `like` is.
fn rounded_like(x: f64, like: &str) -> String {
    let decimals = like.split_once('.').map_or(0, |(_, d)| d.len());
    let s = format!("{x:.decimals$}");
    // "-0.00" and "0.00" are one number
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') { s.trim_start_matches('-').to_string() } else { s }
}

/// The intervals the selected chapters' prose quotes that no recorded output of `book` prints.
pub fn unprinted_intervals(book: &Book, selected: &[usize]) -> Vec<UnprintedInterval> {
    let printed: BTreeSet<(String, String)> = (book.chapters.iter())
        .flat_map(|c| c.blocks.iter().filter_map(|b| b.output.as_ref()))
        .flat_map(|o| intervals(&o.text))
        .map(|f| f.ends)
        .collect();
    let numbers: Vec<(f64, f64)> = (printed.iter())
        .filter_map(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .collect();
    let mut problems = Vec::new();
    for &index in selected {
        let chapter = &book.chapters[index];
        let pages = std::iter::once((&chapter.path, chapter.source.as_str()))
            .chain(chapter.parts.iter().map(|p| (&p.path, p.source.as_str())));
        for (path, source) in pages {
            let lines = LineIndex::new(source);
            for (start, text) in prose(source, chapter.blocks.iter().filter(|b| b.path == *path)) {
                for found in intervals(text) {
                    if printed.contains(&found.ends) {
                        continue;
                    }
                    let mut from = found.range.start.saturating_sub(16);
                    while !text.is_char_boundary(from) {
                        from += 1;
                    }
                    let before = text[from..found.range.start].to_lowercase();
                    let approximate = ["about ", "roughly ", "≈"].iter().any(|w| before.contains(w));
                    let (low, high) = &found.ends;
                    if approximate
                        && numbers.iter().any(|&(a, b)| rounded_like(a, low) == *low && rounded_like(b, high) == *high)
                    {
                        continue;
                    }
                    problems.push(UnprintedInterval {
                        path: path.clone(),
                        line: lines.line_of(start + found.range.start),
                        quoted: text[found.range.clone()].to_string(),
                    });
                }
            }
        }
    }
    problems
}

/// The stretches of a page's source that are prose: everything but its fenced blocks (`blocks`,
/// parsed from `source`), recorded outputs and HTML comments, as (byte offset, text).
fn prose<'a>(source: &'a str, blocks: impl Iterator<Item = &'a CodeBlock>) -> Vec<(usize, &'a str)> {
    let mut hidden: Vec<std::ops::Range<usize>> = html_comments(source);
    for block in blocks {
        hidden.push(block.span.clone());
        if let Some(output) = &block.output {
            hidden.push(output.span.clone());
        }
    }
    hidden.sort_by_key(|r| r.start);
    let mut parts = Vec::new();
    let mut at = 0;
    for r in hidden {
        if r.start > at {
            parts.push((at, &source[at..r.start]));
        }
        at = at.max(r.end);
    }
    if at < source.len() {
        parts.push((at, &source[at..]));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book_of(chapters: &[(&str, &str)]) -> (tempfile::TempDir, Book) {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        let mut summary = String::from("# Summary\n\n");
        for (file, text) in chapters {
            std::fs::write(src.join(file), text).unwrap();
            summary.push_str(&format!("- [{}]({file})\n", &file[..2]));
        }
        std::fs::write(src.join("SUMMARY.md"), summary).unwrap();
        let book = Book::load(tmp.path()).unwrap();
        (tmp, book)
    }

    #[test]
    fn an_interval_in_prose_must_be_one_an_output_prints() {
        let first = "# 1. One\n\n```rust\nprintln!(\"x\");\n```\n\nOutput:\n\n```text\n\
                     gain +0.134 [-0.040, +0.308]; rate 0.198 [0.172, 0.223]\n```\n";
        let second = "# 2. Two\n\nThe gain, $+0.134$ $[-0.040, +0.308]$, and the rate \
                      [0.172, 0.223], and about [0.17, 0.22]; see [1] and [a, b].\n\n\
                      It was [+0.027, +0.255] before a refresh,\nand is not about [0.2, 0.3].\n\
                      <!-- a comment may keep [0.111, 0.222] -->\n\n```text\n[0.333, 0.444]\n```\n";
        let (_tmp, book) = book_of(&[("01-one.md", first), ("02-two.md", second)]);
        let problems = unprinted_intervals(&book, &[0, 1]);
        let found: Vec<(usize, &str)> = problems.iter().map(|p| (p.line, p.quoted.as_str())).collect();
        assert_eq!(found, [(5, "[+0.027, +0.255]"), (6, "[0.2, 0.3]")]);
        assert!(problems[0].to_string().ends_with(
            "02-two.md:5: the prose quotes the interval [+0.027, +0.255], which no Output block \
             of the book prints (a number left from before a refresh?): quote what a block prints"
        ));
        // the Unicode minus and a missing sign read as the printed interval
        let third = "# 3. Three\n\nAs printed: [\u{2212}0.040, 0.308].\n";
        let (_tmp, book) = book_of(&[("01-one.md", first), ("03-three.md", third)]);
        assert!(unprinted_intervals(&book, &[1]).is_empty());
    }

    #[test]
    fn the_books_prose_quotes_only_printed_intervals() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../book");
        let book = Book::load(&dir).unwrap();
        let all: Vec<usize> = (0..book.chapters.len()).collect();
        let problems: Vec<String> = unprinted_intervals(&book, &all).iter().map(|p| p.to_string()).collect();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
