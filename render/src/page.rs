//! Rewrite one page's Markdown for the HTML book, using the `tangle` book model for its
//! blocks: saved blocks lose their `//@save` line and carry an `agentrl` label, recorded
//! outputs are wrapped in a styled box, ```` ```mermaid ```` becomes a diagram element and
//! math becomes MathML. Everything else is left byte for byte as it was.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

use tangle::book::{chapter_file_parts, parse_blocks, LineIndex};
use tangle::{BlockKind, BookError, Chapter, CodeBlock};

use crate::math;

/// CSS classes the theme (`book/theme/agentrl.css`) styles.
pub const SAVED_CLASS: &str = "arl-saved";
pub const SAVED_LABEL_CLASS: &str = "arl-saved-label";
pub const OUTPUT_CLASS: &str = "arl-output";
pub const MERMAID_CLASS: &str = "mermaid";
pub const NOWRAP_CLASS: &str = "arl-nowrap";
/// The class of the span around a display formula, which scrolls it when it is too wide.
pub const MATH_BLOCK_CLASS: &str = "arl-math-block";

/// The generated reference page, relative to `src/`.
pub const LIBRARY_PAGE: &str = "library.md";

/// A page of the book as mdBook hands it over.
pub struct Page<'a> {
    /// Path of the Markdown file inside `src/`, e.g. `02-rl-fundamentals.md`.
    pub source_path: &'a str,
    /// The book's `src/` directory (for error messages).
    pub src_dir: &'a Path,
    /// The page's title in SUMMARY.md.
    pub title: &'a str,
    /// For a chapter's code page (a page nested under the chapter), the chapter's title: its
    /// saved blocks link to that chapter's section of the library page.
    pub code_page_of: Option<&'a str>,
    pub content: &'a str,
}

/// Rewrite a page; errors name the file and line.
pub fn render_page(page: &Page) -> Result<String, BookError> {
    let path = page.src_dir.join(page.source_path);
    let source = page.content;
    let blocks = parse_blocks(&path, source)?;
    let file_name = page.source_path.rsplit('/').next().unwrap_or(page.source_path);
    let (id, slug) = chapter_file_parts(file_name).unwrap_or_default();
    let chapter = Chapter {
        id,
        slug,
        title: page.title.to_string(),
        file: page.source_path.to_string(),
        path: path.clone(),
        source: source.to_string(),
        blocks: blocks.clone(),
        parts: vec![],
    };
    let library_href = match page.code_page_of {
        Some(chapter_title) => library_section_href(page.source_path, chapter_title),
        None => library_href(page.source_path, page.title),
    };

    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for block in &blocks {
        let prefix = line_prefix(source, block.span.start);
        // Indentation (a list item) or a blockquote's `>`: the wrappers repeat it on each line.
        let indent = prefix.chars().all(|c| c == ' ' || c == '\t' || c == '>').then_some(prefix);
        match block.kind {
            BlockKind::Saved => {
                // Named items link to their library entries; an impl block is named by its header.
                let labels: Vec<SavedLabel> = tangle::library::saved_items(&chapter, block)?
                    .into_iter()
                    .filter_map(|item| match item.name {
                        Some(name) => Some(SavedLabel::Item(name)),
                        None => impl_header(&item.text).map(SavedLabel::Impl),
                    })
                    .collect();
                let code = strip_save_marker(&source[block.span.clone()]);
                let replacement = match indent {
                    Some(indent) => saved_wrapper(&code, &labels, &library_href, indent),
                    None => code,
                };
                edits.push((block.span.clone(), replacement));
            }
            BlockKind::Run => {}
            BlockKind::Ignored if is_mermaid(block) => {
                let Some(indent) = indent else {
                    let message = "a mermaid block that opens on a list marker's line is not \
                                   drawn: start its fence on a line of its own, inside the item";
                    return Err(BookError::new(&path, block.fence_line, message));
                };
                edits.push((block.span.clone(), mermaid_element(&block.code, indent)));
            }
            BlockKind::Ignored => {}
        }
        if let (Some(out), Some(indent)) = (&block.output, indent) {
            // The Output paragraph starts its own line, indented like the block above it.
            let out_indent = line_prefix(source, out.span.start);
            if out_indent == indent {
                edits.push((out.span.clone(), output_wrapper(&source[out.span.clone()], indent)));
            }
        }
    }

    edits.extend(callout_edits(source, &blocks));
    let lines = LineIndex::new(source);
    let images: Vec<Range<usize>> = pulldown_cmark::Parser::new_ext(source, math::markdown_options())
        .into_offset_iter()
        .filter_map(|(event, range)| {
            matches!(event, pulldown_cmark::Event::Start(pulldown_cmark::Tag::Image { .. })).then_some(range)
        })
        .collect();
    if let Some(&at) = math::stray_dollars(source).first() {
        let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[at..].find('\n').map_or(source.len(), |i| at + i);
        let display = source[at..].starts_with("$$") || source[..at].ends_with('$');
        let advice = if display {
            "a line inside `$$…$$` that starts like a Markdown block (`-`, `+`, `#`, `>`, `1.`) \
             ends the paragraph and so the formula: move that operator to the end of the line \
             before"
        } else {
            "inline math has no space just inside its dollars, uses `\\vert` for `|` in a \
             table, and is not typeset inside HTML; write `\\$` for a dollar sign"
        };
        let shown = source[line_start..line_end].trim();
        let message = format!("a `$` that is not math would show as raw text: `{shown}`; {advice}");
        return Err(BookError::new(&path, lines.line_of(at), message));
    }
    for formula in math::formulas(source) {
        if edits.iter().any(|(r, _)| r.start < formula.span.end && formula.span.start < r.end) {
            continue;
        }
        if images.iter().any(|r| r.start <= formula.span.start && formula.span.end <= r.end) {
            let message = "math in an image's alt text: alt text is plain text (screen readers \
                           would read the MathML markup aloud); write it in words";
            return Err(BookError::new(&path, lines.line_of(formula.span.start), message));
        }
        let delim_len = if formula.display { 2 } else { 1 };
        let written = &source[formula.span.start + delim_len..formula.span.end - delim_len];
        // A table cell turns `\|` into `|` inside math (a formula continued over lines of a
        // list item or blockquote also differs from its source, by the lines' prefixes).
        if formula.tex.matches("\\|").count() < written.matches("\\|").count() {
            let message = format!(
                "`{}` in a table cell: the table turns `\\|` into `|` inside the formula; write \
                 `\\Vert` for ‖ (or `\\vert` for |)",
                written.trim()
            );
            return Err(BookError::new(&path, lines.line_of(formula.span.start), message));
        }
        let mathml = math::to_mathml(&formula.tex, formula.display).map_err(|e| {
            let delim = if formula.display { "$$" } else { "$" };
            // the formula's lines are the source's (a list item's prefixes aside)
            let within = math::error_line(&formula.tex, formula.display).unwrap_or(0);
            BookError::new(
                &path,
                lines.line_of(formula.span.start) + within,
                // a display formula may run over lines: show it on one
                format!(
                    "cannot typeset {delim}{}{delim}: {e}",
                    formula.tex.split_whitespace().collect::<Vec<_>>().join(" ")
                ),
            )
        })?;
        let mathml = math::markdown_safe(&mathml);
        math::check_inline_html(&mathml).map_err(|e| {
            BookError::new(&path, lines.line_of(formula.span.start), format!("MathML for ${}$: {e}", formula.tex.trim()))
        })?;
        // Browsers may break a line between a formula and the punctuation after it; keep
        // them together.
        let trailing = if formula.display { 0 } else { trailing_punctuation(&source[formula.span.end..]) };
        if trailing > 0 {
            let end = formula.span.end + trailing;
            let punct = &source[formula.span.end..end];
            let text = format!("<span class=\"{NOWRAP_CLASS}\">{mathml}{punct}</span>");
            edits.push((formula.span.start..end, text));
        } else if formula.display {
            // Firefox does not scroll a <math> element that is too wide: a span (valid inside
            // the paragraph the formula sits in) shown as a block scrolls it instead.
            edits.push((formula.span.clone(), format!("<span class=\"{MATH_BLOCK_CLASS}\">{mathml}</span>")));
        } else {
            edits.push((formula.span.clone(), mathml));
        }
    }

    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(source.len() * 2);
    let mut at = 0;
    for (range, text) in edits {
        out.push_str(&source[at..range.start]);
        out.push_str(&text);
        at = range.end;
    }
    out.push_str(&source[at..]);
    Ok(out)
}

/// Length of the run of closing punctuation that starts `text` (`.`, `,`, `)`, …).
fn trailing_punctuation(text: &str) -> usize {
    text.find(|c: char| !".,;:?)".contains(c)).unwrap_or(text.len())
}

/// Text between the start of the line holding `offset` and `offset`.
fn line_prefix(source: &str, offset: usize) -> &str {
    let start = source[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    &source[start..offset]
}

fn is_mermaid(block: &CodeBlock) -> bool {
    block.info.split(|c: char| c == ',' || c.is_whitespace()).next() == Some("mermaid")
}

/// Remove the `//@save` line (the fence's second line) from a saved block's text.
pub fn strip_save_marker(fenced: &str) -> String {
    let Some((opening, rest)) = fenced.split_once('\n') else { return fenced.to_string() };
    let (marker, after) = rest.split_once('\n').unwrap_or((rest, ""));
    if marker.trim_start_matches(['>', ' ', '\t']).trim_end() == "//@save" {
        format!("{opening}\n{after}")
    } else {
        fenced.to_string()
    }
}

/// `library.html#2-reinforcement-learning-fundamentals`, relative to the page: the
/// reference page's section for this chapter (mdBook's heading ids).
pub fn library_href(source_path: &str, title: &str) -> String {
    let up = "../".repeat(source_path.matches('/').count());
    let page = LIBRARY_PAGE.replace(".md", ".html");
    let file = source_path.rsplit('/').next().unwrap_or(source_path);
    if chapter_file_parts(file).is_some() && !title.is_empty() {
        format!("{up}{page}#{}", heading_id(title))
    } else {
        format!("{up}{page}")
    }
}

/// `library.html#4-environments-and-tools-the-bugfix-gym`, relative to the page: the section of
/// the chapter titled `chapter_title`.
pub fn library_section_href(source_path: &str, chapter_title: &str) -> String {
    let up = "../".repeat(source_path.matches('/').count());
    format!("{up}{}#{}", LIBRARY_PAGE.replace(".md", ".html"), heading_id(chapter_title))
}

/// mdBook's id for a heading with this text.
pub fn heading_id(text: &str) -> String {
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// What a saved block's label names: an item (linked to its library entry) or an impl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavedLabel {
    Item(String),
    /// `impl fmt::Display for Family`: an impl block has no name of its own.
    Impl(String),
}

/// The header of an `impl` item's text (`impl fmt::Display for Family`), doc comments and
/// attributes skipped; None for anything else (a `use`).
pub fn impl_header(text: &str) -> Option<String> {
    let code: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.starts_with("//") && !l.starts_with("#[")).collect();
    let joined = code.join(" ");
    let header = joined.split('{').next()?.trim();
    let header = header.split_whitespace().collect::<Vec<_>>().join(" ");
    (header.starts_with("impl ") || header.starts_with("impl<")).then_some(header)
}

/// A saved block inside `<div class="arl-saved">`, headed by a label that names what it
/// adds to `agentrl`: each item links to its entry on the reference page (`#arl-NAME`) and is
/// an anchor the entry links back to. The wrapper ends with a blank line: a `</div>` line
/// opens an HTML block that would run on over a paragraph right below it.
fn saved_wrapper(code: &str, labels: &[SavedLabel], library_href: &str, indent: &str) -> String {
    let mut label = format!(
        "<a href=\"{}\" title=\"This block is saved into the agentrl crate\">saved to <code>agentrl</code></a>",
        html_escape(library_href)
    );
    let page = library_href.split('#').next().unwrap_or(library_href);
    if !labels.is_empty() {
        let list: Vec<String> = labels
            .iter()
            .map(|l| match l {
                SavedLabel::Item(n) => {
                    let anchor = html_escape(&tangle::library::item_anchor(n));
                    format!(
                        "<a id=\"{anchor}\" href=\"{}#{anchor}\" title=\"Its entry in the library\"><code>arl::{}</code></a>",
                        html_escape(page),
                        html_escape(n)
                    )
                }
                SavedLabel::Impl(header) => format!("<code>{}</code>", html_escape(header)),
            })
            .collect();
        let _ = write!(label, ": {}", list.join(", "));
    }
    let blank = indent.trim_end();
    format!(
        "<div class=\"{SAVED_CLASS}\">\n{indent}<div class=\"{SAVED_LABEL_CLASS}\">{label}</div>\n{blank}\n{indent}{code}\n{blank}\n{indent}</div>\n{blank}"
    )
}

/// The callouts' opening words, and the class the theme styles each with.
pub const CALLOUTS: [(&str, &str); 3] = [
    ("Evidence.", "arl-callout-evidence"),
    ("Pitfall.", "arl-callout-pitfall"),
    ("In production.", "arl-callout-production"),
];

/// Each callout's bold opening word (`> **Pitfall.**`) outside code blocks -> its byte range
/// and the HTML that replaces it, carrying the callout's class.
fn callout_edits(source: &str, blocks: &[CodeBlock]) -> Vec<(Range<usize>, String)> {
    let mut edits = Vec::new();
    let mut at = 0;
    for line in source.split_inclusive('\n') {
        let start = at;
        at += line.len();
        if blocks.iter().any(|b| b.span.contains(&start)) {
            continue;
        }
        let body = line.trim_start_matches(|c: char| c == '>' || c == ' ' || c == '\t');
        if body.len() == line.len() {
            continue; // not in a blockquote
        }
        for (word, class) in CALLOUTS {
            let bold = format!("**{word}**");
            if body.starts_with(&bold) {
                let from = start + (line.len() - body.len());
                edits.push((from..from + bold.len(), format!("<strong class=\"{class}\">{word}</strong>")));
            }
        }
    }
    edits
}

/// Images of the page (`![alt](figures/x.svg)`) whose file is not in the book's source
/// folder: mdBook would copy nothing and the reader would see a broken image. Links with a
/// scheme (`https:`, `data:`) or an absolute path are not checked.
pub fn missing_images(page: &Page) -> Vec<BookError> {
    use pulldown_cmark::{Event, Parser, Tag};
    let path = page.src_dir.join(page.source_path);
    let page_dir = Path::new(page.source_path).parent().unwrap_or(Path::new(""));
    let lines = LineIndex::new(page.content);
    let mut missing = Vec::new();
    for (event, range) in Parser::new_ext(page.content, math::markdown_options()).into_offset_iter() {
        // `![alt](src)`, or `<img src="…">` written as HTML
        let dest_url = match event {
            Event::Start(Tag::Image { dest_url, .. }) => dest_url.to_string(),
            Event::Html(html) | Event::InlineHtml(html) => match html_img_src(&html) {
                Some(src) => src,
                None => continue,
            },
            _ => continue,
        };
        let target = dest_url.split(['#', '?']).next().unwrap_or("");
        if target.is_empty() || target.contains(':') || target.starts_with('/') {
            continue;
        }
        // A browser fetches `my%20fig.svg` as the file `my fig.svg`.
        let target = percent_decoded(target);
        let target = target.as_str();
        if !page.src_dir.join(page_dir).join(target).is_file() {
            let message = format!("image {target} does not exist (looked in {})", page.src_dir.join(page_dir).display());
            missing.push(BookError::new(&path, lines.line_of(range.start), message));
        }
    }
    missing
}

/// The `src` of an `<img …>` tag in an HTML fragment (double or single quotes).
fn html_img_src(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let tag = lower.find("<img")?;
    let src = tag + lower[tag..].find("src=")? + 4;
    let quote = html[src..].chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &html[src + 1..];
    Some(value[..value.find(quote)?].to_string())
}

/// `text` with its `%XX` escapes decoded (left as written where one is malformed).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// The `Output:` paragraph and its ```` ```text ```` fence inside `<div class="arl-output">`,
/// then a blank line (see `saved_wrapper`).
fn output_wrapper(output: &str, indent: &str) -> String {
    let blank = indent.trim_end();
    format!("<div class=\"{OUTPUT_CLASS}\">\n{blank}\n{indent}{output}\n{blank}\n{indent}</div>\n{blank}")
}

/// A diagram the bundled mermaid script draws in the browser; its source stays readable
/// as preformatted text where scripts are off. Lines after the first repeat the block's
/// `indent` (a list item's indentation, a blockquote's `>`) so the element stays inside it.
fn mermaid_element(code: &str, indent: &str) -> String {
    let escaped = html_escape(code.trim_end());
    let mut lines = escaped.split('\n');
    let mut out = format!("<pre class=\"{MERMAID_CLASS}\">{}", lines.next().unwrap_or(""));
    for line in lines {
        let prefix = if line.is_empty() { indent.trim_end() } else { indent };
        let _ = write!(out, "\n{prefix}{line}");
    }
    out.push_str("</pre>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(content: &str) -> Page<'_> {
        Page {
            source_path: "02-rl-fundamentals.md",
            src_dir: Path::new("book/src"),
            title: "2. Reinforcement Learning Fundamentals",
            code_page_of: None,
            content,
        }
    }

    fn render(content: &str) -> String {
        render_page(&page(content)).unwrap()
    }

    fn render_err(content: &str) -> BookError {
        render_page(&page(content)).unwrap_err()
    }

    /// A rewritten page as HTML, to see what Markdown makes of the wrappers.
    fn to_html(markdown: &str) -> String {
        let mut out = String::new();
        pulldown_cmark::html::push_html(&mut out, pulldown_cmark::Parser::new(markdown));
        out
    }

    const SAVED: &str = "Intro.\n\n```rust\n//@save\n/// Add one.\npub fn add_one(x: i64) -> i64 { x + 1 }\n\n/// Options.\npub struct Opts;\n```\n\nAfter.\n";

    #[test]
    fn saved_block_loses_marker_and_gets_a_label() {
        let out = render(SAVED);
        assert!(!out.contains("//@save"), "{out}");
        assert!(out.contains("<div class=\"arl-saved\">\n<div class=\"arl-saved-label\">"), "{out}");
        assert!(
            out.contains("href=\"library.html#2-reinforcement-learning-fundamentals\""),
            "{out}"
        );
        // Each item links to its library entry and is the anchor the entry links back to.
        assert!(
            out.contains(
                "<a id=\"arl-add_one\" href=\"library.html#arl-add_one\" title=\"Its entry in the library\">\
                 <code>arl::add_one</code></a>, <a id=\"arl-Opts\" href=\"library.html#arl-Opts\""
            ),
            "{out}"
        );
        // The fence itself is intact, separated from the HTML by blank lines.
        assert!(
            out.contains("</div>\n\n```rust\n/// Add one.\npub fn add_one(x: i64) -> i64 { x + 1 }\n\n/// Options.\npub struct Opts;\n```\n\n</div>\n\n\nAfter.\n"),
            "{out}"
        );
        assert!(out.starts_with("Intro.\n\n<div"));
    }

    #[test]
    fn impl_blocks_are_named_by_their_header_and_callouts_get_their_class() {
        let src = "```rust\n//@save\n/// Shown.\nimpl std::fmt::Display for Opts {\n    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result { Ok(()) }\n}\n```\n\n> **Pitfall.** Read it.\n\n> **In production.** verl does.\n\n```text\n> **Evidence.** not a callout\n```\n";
        let out = render(src);
        assert!(out.contains("<code>impl std::fmt::Display for Opts</code>"), "{out}");
        assert!(out.contains("> <strong class=\"arl-callout-pitfall\">Pitfall.</strong> Read it."), "{out}");
        assert!(out.contains("<strong class=\"arl-callout-production\">In production.</strong>"), "{out}");
        assert!(out.contains("> **Evidence.** not a callout"), "{out}");
        assert_eq!(impl_header("/// Doc.\n#[allow(x)]\nimpl<T: Clone> Trait for Vec<T>\nwhere T: Copy {}"), Some("impl<T: Clone> Trait for Vec<T> where T: Copy".into()));
        assert_eq!(impl_header("use std::fmt;"), None);
    }

    #[test]
    fn output_block_is_wrapped() {
        let src = "```rust\nprintln!(\"hi\");\n```\n\nOutput:\n\n```text\nhi\n```\n\nRead it.\n";
        let out = render(src);
        assert_eq!(
            out,
            "```rust\nprintln!(\"hi\");\n```\n\n<div class=\"arl-output\">\n\nOutput:\n\n```text\nhi\n```\n\n</div>\n\n\nRead it.\n"
        );
    }

    #[test]
    fn a_paragraph_right_below_a_wrapper_is_still_markdown() {
        let src = "```rust\n//@save\n/// A.\npub fn a() {}\n```\nRight after, *emphasis*.\n\n```rust\nprintln!(\"x\");\n```\n\nOutput:\n\n```text\nx\n```\nThen **bold**.\n\n- item:\n\n  ```rust\n  println!(\"y\");\n  ```\n\n  Output:\n\n  ```text\n  y\n  ```\n  In the *item*.\n";
        let out = to_html(&render(src));
        assert!(out.contains("<p>Right after, <em>emphasis</em>.</p>"), "{out}");
        assert!(out.contains("<p>Then <strong>bold</strong>.</p>"), "{out}");
        assert!(out.contains("<p>In the <em>item</em>.</p>"), "{out}");
    }

    #[test]
    fn a_missing_image_is_an_error_at_its_line() {
        let dir = std::env::temp_dir().join(format!("arl-images-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("figures")).unwrap();
        std::fs::write(dir.join("figures/there.svg"), "<svg/>").unwrap();
        std::fs::write(dir.join("figures/my fig.svg"), "<svg/>").unwrap();
        let content = "Intro.\n\n![A figure](figures/there.svg) ![B](figures/my%20fig.svg)\n\n![Gone](figures/gone.svg) and ![web](https://x.org/a.png)\n\n<img src=\"figures/there.svg\" width=\"50%\">\n\n<p><img alt=\"x\" src='figures/lost.svg'></p>\n";
        let page = Page { source_path: "02-x.md", src_dir: &dir, title: "2. X", code_page_of: None, content };
        let errors = missing_images(&page);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(errors[0].line, 5);
        assert!(errors[0].message.contains("image figures/gone.svg does not exist"), "{}", errors[0]);
        assert_eq!(errors[1].line, 9);
        assert!(errors[1].message.contains("image figures/lost.svg does not exist"), "{}", errors[1]);
    }

    #[test]
    fn blocks_in_a_blockquote_are_wrapped_inside_it() {
        let src = "> **Note.**\n>\n> ```rust\n> //@save\n> /// One.\n> pub fn one() -> i64 { 1 }\n> ```\n>\n> ```rust\n> println!(\"x\");\n> ```\n>\n> Output:\n>\n> ```text\n> x\n> ```\n\nAfter.\n";
        let out = render(src);
        assert!(out.contains("> <div class=\"arl-output\">\n>\n> Output:\n>\n> ```text\n> x\n> ```\n>\n> </div>\n"), "{out}");
        assert!(out.contains("> <div class=\"arl-saved\">\n> <div class=\"arl-saved-label\">"), "{out}");
        assert!(!out.contains("//@save"), "{out}");
    }

    #[test]
    fn indented_blocks_keep_their_indentation() {
        let src = "1. Step:\n\n   ```rust\n   println!(\"x\");\n   ```\n\n   Output:\n\n   ```text\n   x\n   ```\n";
        let out = render(src);
        assert!(out.contains("   <div class=\"arl-output\">\n\n   Output:\n\n   ```text\n   x\n   ```\n\n   </div>\n"), "{out}");
    }

    #[test]
    fn math_becomes_mathml_and_code_is_untouched() {
        let src = "The return $G_t = \\sum_k \\gamma^k r_{t+k}$ is\n$$V^*(s) = \\max_a Q^*(s, a),$$\nsee `$x$`.\n\n| a | b |\n| --- | --- |\n| $\\pi_\\theta$ | policy |\n";
        let out = render(src);
        assert!(!out.contains('$') || out.contains("`$x$`"), "{out}");
        assert!(out.contains("<math display=\"inline\">"), "{out}");
        assert!(out.contains("<math display=\"block\">"), "{out}");
        assert!(out.contains("see `$x$`."), "{out}");
        // Subscripts are MathML, not Markdown emphasis or escapes.
        assert!(out.contains("<msub><mi>π</mi><mi>θ</mi></msub>"), "{out}");
        assert!(!out.contains('\\'), "{out}");
        assert!(out.contains("| policy |"));
    }

    #[test]
    fn math_in_alt_text_is_an_error() {
        let src = "Intro.\n\n![The return $G_t$ per step](figures/x.svg)\n";
        let err = render_err(src);
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("alt text"), "{err}");
    }

    #[test]
    fn an_escaped_bar_in_table_math_is_an_error() {
        let src = "| a | b |\n| --- | --- |\n| $\\|x\\|$ | norm |\n";
        let err = render_err(src);
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("write `\\Vert`"), "{err}");
        assert!(render("Outside a table $\\|x\\|$ is a norm.\n").contains("<math"));
    }

    #[test]
    fn punctuation_after_inline_math_stays_with_it() {
        let out = render("on $a_t$. Then $x$ and ($y$), $$z$$.\n");
        assert!(out.starts_with("on <span class=\"arl-nowrap\"><math display=\"inline\">"), "{out}");
        assert!(out.contains("</math>.</span> Then <math"), "{out}");
        assert!(out.contains("</math>),</span>"), "{out}");
        assert!(out.contains("</math></span>.\n"), "{out}");
        assert!(out.contains("<span class=\"arl-math-block\"><math display=\"block\">"), "{out}");
    }

    #[test]
    fn bad_math_names_file_and_line() {
        let err = render_err("One.\n\nTwo $\\frac{1} \\nosuchcommand$ three.\n");
        assert_eq!(err.line, 3);
        assert!(err.to_string().starts_with("book/src/02-rl-fundamentals.md:3: cannot typeset $"), "{err}");
    }

    #[test]
    fn bad_math_in_a_long_display_formula_names_its_own_line() {
        let err = render_err("One.\n\n$$\nJ = \\mathbb{E}[R]\n  = \\nosuchcommand\n$$\n");
        assert_eq!(err.line, 5, "{err}");
        let err = render_err("One.\n\n$$J = \\frac{1}\n{2} + \\nosuchcommand$$\n");
        assert_eq!(err.line, 4, "{err}");
        assert!(err.message.starts_with("cannot typeset $$J = \\frac{1} {2} +"), "{err}");
    }

    #[test]
    fn math_the_parser_did_not_read_is_an_error_at_its_line() {
        for (content, line) in [
            ("One.\n\nA spaced $ x $ formula.\n", 3),
            ("| a | b |\n| --- | --- |\n| $|x|$ | abs |\n", 3),
            ("Text.\n\n<div>\n$x$\n</div>\n", 4),
        ] {
            let err = render_err(content);
            assert_eq!(err.line, line, "{content}");
            assert!(err.message.contains("a `$` that is not math"), "{err}");
        }
        let err = render_err("Intro.\n\n$$J = \\mathbb{E}[R]\n- \\beta\\,\\mathrm{KL}$$\n");
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("starts like a Markdown block"), "{err}");
        assert!(render("Costs \\$5, not $x$.\n").contains("Costs \\$5, not <span class=\"arl-nowrap\"><math"));
    }

    #[test]
    fn mermaid_becomes_a_diagram_element() {
        let out = render("Graph:\n\n```mermaid\nflowchart LR\n  A --> B\n```\n");
        assert_eq!(out, "Graph:\n\n<pre class=\"mermaid\">flowchart LR\n  A --&gt; B</pre>\n");
    }

    #[test]
    fn mermaid_in_a_list_item_or_blockquote_is_drawn_there() {
        let diagram = "<pre class=\"mermaid\">flowchart LR\n  A --&gt; B\n\n  B --&gt; C</pre>";
        let item = render("1. Graph:\n\n   ```mermaid\n   flowchart LR\n     A --> B\n\n     B --> C\n   ```\n\n   After.\n");
        let item_html = to_html(&item);
        assert!(item_html.contains(&format!("<li>\n<p>Graph:</p>\n{diagram}\n<p>After.</p>\n</li>")), "{item_html}");
        let quote = render("> Graph:\n>\n> ```mermaid\n> flowchart LR\n>   A --> B\n>\n>   B --> C\n> ```\n");
        let quote_html = to_html(&quote);
        assert!(quote_html.contains(&format!("<blockquote>\n<p>Graph:</p>\n{diagram}\n</blockquote>")), "{quote_html}");
        let err = render_err("Intro.\n\n- ```mermaid\n  flowchart LR\n  ```\n");
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("mermaid block that opens on a list marker's line"), "{err}");
    }

    #[test]
    fn other_pages_link_to_the_library_page_itself() {
        assert_eq!(library_href("sources.md", "Sources"), "library.html");
        assert_eq!(library_href("part/04-gym.md", "4. Gym"), "../library.html#4-gym");
        assert_eq!(heading_id("2. Reinforcement Learning Fundamentals"), "2-reinforcement-learning-fundamentals");
    }

    #[test]
    fn strip_marker_only_when_present() {
        assert_eq!(strip_save_marker("```rust\n//@save\nfn f() {}\n```"), "```rust\nfn f() {}\n```");
        assert_eq!(strip_save_marker("```rust\nfn f() {}\n```"), "```rust\nfn f() {}\n```");
    }
}
