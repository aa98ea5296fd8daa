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

fn output_markdown(text: &str) -> String {
    let fence = fence_for(text);
    format!("Output:\n\n{fence}text\n{text}{fence}")
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
            Some(out) => edits.push((out.span.start, out.span.end, output_markdown(&text))),
            None if text.is_empty() => {}
            None => edits.push((block.span.end, block.span.end, format!("\n\n{}", output_markdown(&text)))),
        }
    }
    edits.sort_by_key(|e| e.0);
    let mut result = src.clone();
    for (start, end, replacement) in edits.into_iter().rev() {
        result.replace_range(start..end, &replacement);
    }
    result
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
    fn missing_final_newline_is_recorded_with_one() {
        assert_eq!(recorded_form("a"), "a\n");
        assert_eq!(recorded_form(""), "");
    }
}
