//! Rewrite a chapter's Output blocks, and nothing else, from what its blocks printed.

use anyhow::{Context, Result};
use tangle::{Chapter, CodeBlock};

/// The recorded form of printed text: what the Output fence must hold.
pub fn recorded_form(printed: &str) -> String {
    if printed.is_empty() || printed.ends_with('\n') {
        printed.to_string()
    } else {
        format!("{printed}\n")
    }
}

/// A fence long enough that no line of `text` closes it.
fn fence_for(text: &str) -> String {
    let longest = text
        .lines()
        .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count())
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The Output block for `text`, each line after the first led by `prefix`: the container
/// prefix of the line it starts on (`> ` in a blockquote, spaces in a list item).
fn output_markdown(text: &str, prefix: &str) -> String {
    let fence = fence_for(text);
    with_prefix(&format!("Output:\n\n{fence}text\n{text}{fence}"), prefix)
}

/// `markdown` with `prefix` before every line but the first (trimmed before an empty line).
fn with_prefix(markdown: &str, prefix: &str) -> String {
    let blank = prefix.trim_end();
    let mut out = String::new();
    for (k, line) in markdown.split('\n').enumerate() {
        if k > 0 {
            out.push('\n');
            out.push_str(if line.is_empty() { blank } else { prefix });
        }
        out.push_str(line);
    }
    out
}

/// What leads the line holding `at` up to `at`, as a prefix for the lines after it: `>`
/// kept (blockquotes), anything else (a list marker, indentation) turned into spaces.
fn container_prefix(src: &str, at: usize) -> String {
    let line_start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    src[line_start..at].chars().map(|c| if c == '>' { '>' } else { ' ' }).collect()
}

/// New chapter source with each `(block, printed)` pair's Output updated: replaced when it
/// differs, inserted after a block that now prints, removed after one that no longer does.
/// Blocks not listed (not run) keep their Output as it is.
pub fn rewrite(chapter: &Chapter, printed: &[(&CodeBlock, String)]) -> String {
    let src = &chapter.source;
    // (start, end, replacement), applied back to front.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for (block, text) in printed {
        let text = recorded_form(text);
        match &block.output {
            Some(out) if out.text == text => {}
            Some(out) if text.is_empty() => edits.push((block.span.end, out.span.end, String::new())),
            Some(out) => {
                let prefix = container_prefix(src, out.span.start);
                edits.push((out.span.start, out.span.end, output_markdown(&text, &prefix)))
            }
            None if text.is_empty() => {}
            None => {
                let prefix = container_prefix(src, block.span.start);
                let inserted = format!("\n{}\n{prefix}{}", prefix.trim_end(), output_markdown(&text, &prefix));
                edits.push((block.span.end, block.span.end, inserted))
            }
        }
    }
    // A file written with CRLF line endings keeps them in what refresh writes.
    if src.matches("\r\n").count() * 2 > src.matches('\n').count() {
        for edit in &mut edits {
            edit.2 = edit.2.replace('\n', "\r\n");
        }
    }
    edits.sort_by_key(|e| e.0);
    let mut result = src.clone();
    for (start, end, replacement) in edits.into_iter().rev() {
        result.replace_range(start..end, &replacement);
    }
    result
}

/// A printed block refresh cannot record, and why.
#[derive(Debug)]
pub struct Unrecordable<'c> {
    pub block: &'c CodeBlock,
    pub printed: String,
    /// What it printed that an Output block cannot hold, in words: `U+0001 (a control
    /// character) on line 1 of its output`.
    pub reason: String,
}

/// The first character of `text` an Output block cannot hold (a control character other than
/// tab and newline: a chapter may not contain one, and a carriage return reads back as a line
/// ending) -> (1-based line, character).
pub fn unholdable_char(text: &str) -> Option<(usize, char)> {
    text.split('\n').enumerate().find_map(|(k, line)| {
        line.chars().find(|&c| c.is_control() && c != '\t').map(|c| (k + 1, c))
    })
}

/// `c` named for a message: `a carriage return (U+000D)`, `U+0001 (a control character)`.
fn named(c: char) -> String {
    match c {
        '\r' => "a carriage return (U+000D), which Markdown reads as a line ending".to_string(),
        '\u{1b}' => "an escape (U+001B, as terminal colours begin)".to_string(),
        c => format!("U+{:04X} (a control character)", c as u32),
    }
}

/// The printed blocks whose Output, as `new_source` records it, would not read back as what
/// they printed: each block that printed a character an Output block cannot hold, named; or,
/// when none did and `new_source` still does not read back, every block that differs.
pub fn unrecordable<'c>(
    chapter: &'c Chapter,
    printed: &[(&'c CodeBlock, String)],
    new_source: &str,
) -> Vec<Unrecordable<'c>> {
    let holds_a_bad_char: Vec<Unrecordable<'c>> = printed
        .iter()
        .filter_map(|(block, text)| {
            let (line, c) = unholdable_char(text)?;
            let reason = format!("{} on line {line} of its output", named(c));
            Some(Unrecordable { block, printed: text.clone(), reason })
        })
        .collect();
    if !holds_a_bad_char.is_empty() {
        return holds_a_bad_char;
    }
    let unreadable = |(block, text): &(&'c CodeBlock, String), why: &str| Unrecordable {
        block,
        printed: text.clone(),
        reason: why.to_string(),
    };
    let reparsed = match tangle::book::parse_blocks(&chapter.path, new_source) {
        Ok(blocks) => blocks,
        Err(e) => {
            // refresh wrote something unreadable: record nothing
            let why = format!("the refreshed chapter would not parse ({e})");
            return printed.iter().map(|p| unreadable(p, &why)).collect();
        }
    };
    let old_runs: Vec<&CodeBlock> = chapter.run_blocks().collect();
    let new_runs: Vec<&CodeBlock> = reparsed.iter().filter(|b| b.kind == tangle::BlockKind::Run).collect();
    printed
        .iter()
        .filter(|(block, text)| {
            let Some(k) = old_runs.iter().position(|b| std::ptr::eq(*b, *block)) else { return true };
            let read_back = new_runs.get(k).map(|b| b.output.as_ref().map_or("", |o| o.text.as_str()));
            read_back != Some(recorded_form(text).as_str())
        })
        .map(|p| unreadable(p, "its Output would not read back as what it printed"))
        .collect()
}

/// How writing a refreshed chapter went.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    Unchanged,
    Rewritten,
    /// The file no longer holds what the checker read: someone saved it meanwhile.
    ChangedMeanwhile,
}

/// Write `new_source` over the chapter atomically (temp file + rename), only if the file
/// still holds `chapter.source`, the text the checker read and ran.
pub fn write_chapter(chapter: &Chapter, new_source: &str) -> Result<Written> {
    if new_source == chapter.source {
        return Ok(if std::fs::read_to_string(&chapter.path).ok().as_deref() == Some(chapter.source.as_str()) {
            Written::Unchanged
        } else {
            Written::ChangedMeanwhile
        });
    }
    match tangle::library::replace_if_unchanged(&chapter.path, Some(&chapter.source), new_source) {
        Ok(()) => Ok(Written::Rewritten),
        Err(e) if e.kind() == std::io::ErrorKind::Other => Ok(Written::ChangedMeanwhile),
        Err(e) => Err(e).with_context(|| format!("replacing {}", chapter.path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn chapter(src: &str) -> Chapter {
        let path = PathBuf::from("book/src/01-t.md");
        Chapter {
            id: "01".into(),
            slug: "t".into(),
            title: "T".into(),
            file: "01-t.md".into(),
            blocks: tangle::book::parse_blocks(&path, src).unwrap(),
            path,
            source: src.into(),
            parts: vec![],
        }
    }

    fn refresh(src: &str, outputs: &[&str]) -> String {
        let ch = chapter(src);
        let runs: Vec<&CodeBlock> = ch.run_blocks().collect();
        let printed: Vec<(&CodeBlock, String)> =
            runs.iter().zip(outputs).map(|(b, o)| (*b, o.to_string())).collect();
        rewrite(&ch, &printed)
    }

    const SRC: &str = "# T\n\nProse *kept*.\n\n```rust\nprintln!(\"a\");\n```\n\nOutput:\n\n```text\nold\n```\n\nMiddle.\n\n```rust\nlet x = 1;\n```\n\nEnd.\n";

    #[test]
    fn up_to_date_is_a_byte_for_byte_no_op() {
        assert_eq!(refresh(SRC, &["old\n", ""]), SRC);
    }

    #[test]
    fn replaces_inserts_and_removes_only_outputs() {
        let new = refresh(SRC, &["new\n", "x\n"]);
        assert_eq!(
            new,
            "# T\n\nProse *kept*.\n\n```rust\nprintln!(\"a\");\n```\n\nOutput:\n\n```text\nnew\n```\n\nMiddle.\n\n```rust\nlet x = 1;\n```\n\nOutput:\n\n```text\nx\n```\n\nEnd.\n"
        );
        let removed = refresh(SRC, &["", ""]);
        assert_eq!(removed, "# T\n\nProse *kept*.\n\n```rust\nprintln!(\"a\");\n```\n\nMiddle.\n\n```rust\nlet x = 1;\n```\n\nEnd.\n");
        // And the results parse back to the same outputs, so a second refresh changes nothing.
        assert_eq!(refresh(&new, &["new\n", "x\n"]), new);
        assert_eq!(refresh(&removed, &["", ""]), removed);
    }

    #[test]
    fn output_with_fences_gets_a_longer_fence() {
        let new = refresh(SRC, &["```\ninner\n```\n", ""]);
        assert!(new.contains("Output:\n\n````text\n```\ninner\n```\n````"), "{new}");
        let ch = chapter(&new);
        assert_eq!(ch.run_blocks().next().unwrap().output.as_ref().unwrap().text, "```\ninner\n```\n");
    }

    #[test]
    fn outputs_in_a_blockquote_or_list_keep_its_prefix() {
        let quoted = "> Note.\n>\n> ```rust\n> println!(\"a\");\n> ```\n>\n> Output:\n>\n> ```text\n> old\n> ```\n\nAfter.\n";
        let new = refresh(quoted, &["one\ntwo\n"]);
        assert_eq!(new, quoted.replace("> old\n", "> one\n> two\n"));
        let listed = "1. Step:\n\n   ```rust\n   println!(\"a\");\n   ```\n\nAfter.\n";
        let new = refresh(listed, &["x\n"]);
        assert_eq!(new, "1. Step:\n\n   ```rust\n   println!(\"a\");\n   ```\n\n   Output:\n\n   ```text\n   x\n   ```\n\nAfter.\n");
        // Both parse back to the recorded text, so a second refresh changes nothing.
        assert_eq!(refresh(&new, &["x\n"]), new);
        let marker = "- ```rust\n  println!(\"a\");\n  ```\n";
        assert_eq!(refresh(marker, &["x\n"]), "- ```rust\n  println!(\"a\");\n  ```\n\n  Output:\n\n  ```text\n  x\n  ```\n");
    }

    #[test]
    fn a_crlf_chapter_keeps_crlf_line_endings() {
        let crlf = SRC.replace('\n', "\r\n");
        let new = refresh(&crlf, &["new\n", "x\n"]);
        assert_eq!(new, refresh(SRC, &["new\n", "x\n"]).replace('\n', "\r\n"));
        assert_eq!(refresh(&new, &["new\n", "x\n"]), new);
    }

    #[test]
    fn a_carriage_return_cannot_be_recorded() {
        let ch = chapter(SRC);
        let runs: Vec<&CodeBlock> = ch.run_blocks().collect();
        let printed = vec![(runs[0], "cr\r\n".to_string()), (runs[1], "fine\n".to_string())];
        let new = rewrite(&ch, &printed);
        let bad = unrecordable(&ch, &printed, &new);
        assert_eq!(bad.len(), 1);
        assert!(std::ptr::eq(bad[0].block, runs[0]));
        assert!(bad[0].reason.starts_with("a carriage return (U+000D)"), "{}", bad[0].reason);
        let good = vec![(runs[0], "new\n".to_string()), (runs[1], "```\nx\n".to_string())];
        assert!(unrecordable(&ch, &good, &rewrite(&ch, &good)).is_empty());
    }

    #[test]
    fn a_control_character_is_named_and_only_its_block_is_refused() {
        let ch = chapter(SRC);
        let runs: Vec<&CodeBlock> = ch.run_blocks().collect();
        let printed = vec![(runs[0], "ok\nbell \u{1}!\n".to_string()), (runs[1], "after\n".to_string())];
        let bad = unrecordable(&ch, &printed, &rewrite(&ch, &printed));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(std::ptr::eq(bad[0].block, runs[0]));
        assert_eq!(bad[0].reason, "U+0001 (a control character) on line 2 of its output");
        assert_eq!(unholdable_char("tab\there\n"), None);
        assert_eq!(unholdable_char("a\n\u{1b}[31m"), Some((2, '\u{1b}')));
    }

    #[test]
    fn missing_final_newline_is_recorded_with_one() {
        assert_eq!(recorded_form("a"), "a\n");
        assert_eq!(recorded_form(""), "");
    }
}
