//! Rewrapping a paragraph can start a line with `1. `, `- `, `# ` or `> `, and Markdown then
//! reads it as a list, a heading or a quote in the middle of a sentence (chapter 11 once
//! rendered "…its reward approached / 1. Under the hidden-test reward…" as a list). The
//! book's lists and headings always follow a blank line, so a line that would open one
//! right after a paragraph line is such an accident.

use std::path::Path;

/// `12. text` or `3) text`: an item of an ordered list.
fn is_numbered_item(t: &str) -> bool {
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

/// Lines (1-based) that would interrupt the paragraph they continue.
fn interrupted_paragraphs(text: &str) -> Vec<(usize, String)> {
    let opens_block = |l: &str| {
        let t = l.trim_start();
        let indent = l.len() - t.len();
        indent < 4
            && (t.starts_with("1. ")
                || t.starts_with("1) ")
                || ["- ", "* ", "+ ", "> "].iter().any(|m| t.starts_with(m))
                || (t.starts_with('#') && t.trim_start_matches('#').starts_with(' ')))
    };
    // a line that continues a paragraph: text, not part of a list, quote, table or heading
    let paragraph_text = |l: &str| {
        let t = l.trim_start();
        !t.is_empty()
            && l.len() - t.len() < 2
            && !opens_block(l)
            && !t.starts_with('|')
            && !t.starts_with('>')
            && !is_numbered_item(t) // "2. item"
    };
    let mut found = vec![];
    let mut in_fence = false;
    let mut previous = "";
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            previous = "";
            continue;
        }
        if !in_fence && opens_block(line) && paragraph_text(previous) {
            found.push((i + 1, line.to_string()));
        }
        previous = if in_fence { "" } else { line };
    }
    found
}

#[test]
fn no_paragraph_line_starts_a_list_heading_or_quote() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src");
    let mut bad = vec![];
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (line, content) in interrupted_paragraphs(&text) {
                bad.push(format!("book/src/{}:{line}: {content}", path.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    bad.sort();
    assert!(bad.is_empty(), "paragraph lines that Markdown reads as a new block:\n{}", bad.join("\n"));
}

#[test]
fn the_check_finds_what_it_is_for() {
    let text = "Its reward approached\n1. Under the hidden reward\n\n1. a real list\n2. item\n\
                Some text:\n- not allowed without a blank line\n\n```text\n# in a fence\n```\n\
                A line\n# heading glued to a paragraph\n";
    let lines: Vec<usize> = interrupted_paragraphs(text).into_iter().map(|(l, _)| l).collect();
    assert_eq!(lines, vec![2, 7, 13]);
    // a paragraph line may itself start with a number
    assert_eq!(interrupted_paragraphs("0.006). The agent's reward approached\n1. Under it\n").len(), 1);
}
