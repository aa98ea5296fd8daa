//! mdBook's preprocessor protocol: `[context, book]` as JSON on stdin, the book on stdout.
//!
//! Written against mdBook 0.4 (book items under `sections`); items under `items` (0.5)
//! are walked the same way. Only each chapter's `content` is changed; every other field
//! goes back exactly as it came.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::page::{render_page, Page};
use tangle::book::chapter_file_parts;

/// The mdBook minor version whose JSON this preprocessor was written against.
pub const MDBOOK_VERSION: &str = "0.4";

/// Renderers the rewritten Markdown is meant for.
pub fn supports(renderer: &str) -> bool {
    renderer == "html"
}

/// Process mdBook's input; errors in pages are reported together, `file:line: message`.
pub fn run(input: &str) -> Result<String> {
    let mut value: Value = serde_json::from_str(input).context("mdBook's input is not JSON")?;
    let Some([context, book]) = value.as_array_mut().map(|a| a.as_mut_slice()) else {
        bail!("mdBook's input is not a [context, book] pair");
    };
    if let Some(version) = context.get("mdbook_version").and_then(Value::as_str) {
        if !version.starts_with(&format!("{MDBOOK_VERSION}.")) {
            eprintln!(
                "mdbook-agentrl: warning: written for mdBook {MDBOOK_VERSION}.x, running under mdBook {version}"
            );
        }
    }
    let root = PathBuf::from(context.get("root").and_then(Value::as_str).unwrap_or("."));
    let src = context
        .pointer("/config/book/src")
        .and_then(Value::as_str)
        .unwrap_or("src");
    let src_dir = root.join(src);
    let mut errors = Vec::new();
    // mdBook 0.4 lists the book's items under `sections`, 0.5 under `items`.
    let key = match ["sections", "items"].into_iter().find(|k| book.get(k).is_some()) {
        Some(key) => key,
        None => bail!("mdBook's book has neither `sections` nor `items`"),
    };
    walk(&mut book[key], &src_dir, None, &mut errors);
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    Ok(serde_json::to_string(book)?)
}

/// Render every page of `items`; `chapter` is the title of the chapter they are nested under, if
/// any: such a page that is not itself a chapter is the chapter's code page (as tangle reads
/// SUMMARY.md), and its saved blocks link to the chapter's section of the library page.
fn walk(items: &mut Value, src_dir: &Path, chapter_title: Option<&str>, errors: &mut Vec<String>) {
    let Some(items) = items.as_array_mut() else { return };
    for item in items {
        let Some(chapter) = item.get_mut("Chapter") else { continue };
        let source_path = chapter
            .get("source_path")
            .and_then(Value::as_str)
            .or_else(|| chapter.get("path").and_then(Value::as_str))
            .map(str::to_string);
        let title = chapter.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        let file = source_path.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p));
        let is_chapter = file.and_then(chapter_file_parts).is_some();
        let code_page_of = chapter_title.filter(|_| !is_chapter);
        if let (Some(source_path), Some(content)) =
            (source_path, chapter.get("content").and_then(Value::as_str))
        {
            let page = Page { source_path: &source_path, src_dir, title: &title, code_page_of, content };
            errors.extend(crate::page::missing_images(&page).iter().map(|e| e.to_string()));
            match render_page(&page) {
                Ok(rendered) => chapter["content"] = Value::String(rendered),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if let Some(sub) = chapter.get_mut("sub_items") {
            walk(sub, src_dir, is_chapter.then_some(title.as_str()), errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_chapters_and_keeps_everything_else() {
        let input = serde_json::json!([
            {"root": "/b", "config": {"book": {"src": "src"}}, "renderer": "html", "mdbook_version": "0.4.52"},
            {"sections": [
                {"PartTitle": "Part I"},
                {"Chapter": {"name": "2. Fundamentals", "content": "$x$\n", "number": [2],
                  "sub_items": [{"Chapter": {"name": "Sub", "content": "```rust\n//@save\n/// F.\npub fn f() {}\n```\n",
                     "number": null, "sub_items": [], "path": "ch02-code.md", "source_path": "ch02-code.md", "parent_names": []}}],
                  "path": "02-fundamentals.md", "source_path": "02-fundamentals.md", "parent_names": []}},
                "Separator"
             ], "__non_exhaustive": null}
        ]);
        let out: Value = serde_json::from_str(&run(&input.to_string()).unwrap()).unwrap();
        assert_eq!(out["sections"][0], serde_json::json!({"PartTitle": "Part I"}));
        assert_eq!(out["sections"][2], "Separator");
        let ch = &out["sections"][1]["Chapter"];
        assert!(ch["content"].as_str().unwrap().starts_with("<math display=\"inline\">"));
        assert_eq!(ch["number"], serde_json::json!([2]));
        let sub = ch["sub_items"][0]["Chapter"]["content"].as_str().unwrap();
        assert!(sub.contains("arl-saved") && !sub.contains("//@save"), "{sub}");
        // a code page of chapter 2 links to chapter 2's section of the library page
        assert!(sub.contains("library.html#2-fundamentals") && !sub.contains("library.html#sub"), "{sub}");
        assert!(out.get("__non_exhaustive").is_some());
    }

    #[test]
    fn page_errors_are_reported_with_file_and_line() {
        let input = serde_json::json!([
            {"root": "/b", "config": {"book": {}}, "renderer": "html", "mdbook_version": "0.4.52"},
            {"sections": [{"Chapter": {"name": "X", "content": "a\n\n```rust\nlet x = 1;\n", "number": null,
               "sub_items": [], "path": "02-x.md", "source_path": "02-x.md", "parent_names": []}}]}
        ]);
        let err = run(&input.to_string()).unwrap_err().to_string();
        assert!(err.contains("/b/src/02-x.md:3: unterminated code fence"), "{err}");
    }

    #[test]
    fn only_html_is_supported() {
        assert!(supports("html"));
        assert!(!supports("markdown"));
    }
}
