//! The book model and the tangler.
//!
//! [`book`] parses chapters (SUMMARY order, fenced blocks, recorded outputs, with byte
//! offsets and Markdown lines); [`library`] turns `//@save` blocks into the `agentrl`
//! crate and its reference page. The checker and the renderer use this model instead of
//! parsing Markdown again. [`labs`] hashes the code a lab ran and checks its results files.

pub mod book;
pub mod labs;
pub mod library;

pub use book::{BlockKind, Book, BookError, Chapter, ChapterPart, CodeBlock, OutputBlock};

use std::path::{Path, PathBuf};

/// Everything a full tangle writes: crate files (relative to the crate dir) and the
/// reference page (relative to the book dir).
pub struct Tangled {
    pub crate_files: Vec<library::GeneratedFile>,
    pub reference: library::GeneratedFile,
}

/// Tangle the whole book.
pub fn tangle_book(book: &Book) -> Result<Tangled, BookError> {
    Ok(Tangled {
        crate_files: library::crate_files(book, book.chapters.len(), true)?,
        reference: library::reference_page(book)?,
    })
}

/// Write `crate_dir` and the reference page; removes modules of chapters that are gone
/// (`src/*.rs` that no chapter writes) -> the removed paths. Other files tangle did not write
/// are left alone (`stale` reports them).
pub fn write(book: &Book, tangled: &Tangled, crate_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    library::write_files(crate_dir, &tangled.crate_files)?;
    let orphans = library::orphan_modules(crate_dir, &tangled.crate_files);
    for orphan in &orphans {
        std::fs::remove_file(orphan)?;
    }
    library::write_files(&book.dir, std::slice::from_ref(&tangled.reference))?;
    Ok(orphans)
}

/// Why a path is not as a fresh tangle would leave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staleness {
    /// A fresh tangle writes it; it is not there.
    Missing,
    /// A fresh tangle writes other content.
    Differs,
    /// A fresh tangle does not write it (an old chapter's module, a hand-added file).
    NotGenerated,
}

impl std::fmt::Display for Staleness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Staleness::Missing => "is missing (a fresh tangle writes it)",
            Staleness::Differs => "differs from a fresh tangle",
            Staleness::NotGenerated => "is not written by tangle (the crate holds generated files only)",
        })
    }
}

/// Paths whose committed content differs from a fresh tangle, and why.
pub fn stale_reasons(book: &Book, tangled: &Tangled, crate_dir: &Path) -> Vec<(PathBuf, Staleness)> {
    let why = |p: PathBuf| {
        let reason = if p.exists() { Staleness::Differs } else { Staleness::Missing };
        (p, reason)
    };
    let mut stale: Vec<_> = library::stale_files(crate_dir, &tangled.crate_files).into_iter().map(why).collect();
    stale.extend(library::foreign_files(crate_dir, &tangled.crate_files).into_iter().map(|p| (p, Staleness::NotGenerated)));
    stale.extend(library::stale_files(&book.dir, std::slice::from_ref(&tangled.reference)).into_iter().map(why));
    stale
}

/// Paths whose committed content differs from a fresh tangle.
pub fn stale(book: &Book, tangled: &Tangled, crate_dir: &Path) -> Vec<PathBuf> {
    stale_reasons(book, tangled, crate_dir).into_iter().map(|(p, _)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book_in(dir: &Path, chapters: &[(&str, &str)]) -> Book {
        let src = dir.join("book/src");
        std::fs::create_dir_all(&src).unwrap();
        let mut summary = String::from("# Summary\n\n");
        for (file, text) in chapters {
            summary.push_str(&format!("- [{file}]({file})\n"));
            std::fs::write(src.join(file), text).unwrap();
        }
        std::fs::write(src.join("SUMMARY.md"), summary).unwrap();
        Book::load(&dir.join("book")).unwrap()
    }

    const CH1: &str = "# 1\n\n```rust\n//@save\nuse std::fmt;\n/// One.\npub fn one() -> i64 { 1 }\n```\n\n```rust\n//@save\nuse std::fmt;\n/// Two, from one.\npub fn two() -> i64 { one() + one() }\n```\n";
    const CH2: &str = "# 2\n\n```rust\n//@save\n/// Three, via the crate root.\npub fn three() -> i64 { arl::two() + 1 }\n```\n";

    /// A book whose SUMMARY.md is written out: `summary` lines, then each file.
    fn book_with_summary(dir: &Path, summary: &str, files: &[(&str, &str)]) -> Result<Book, BookError> {
        let src = dir.join("book/src");
        std::fs::create_dir_all(&src).unwrap();
        for (file, text) in files {
            std::fs::write(src.join(file), text).unwrap();
        }
        std::fs::write(src.join("SUMMARY.md"), summary).unwrap();
        Book::load(&dir.join("book"))
    }

    #[test]
    fn a_page_nested_under_a_chapter_is_its_code_page() {
        let tmp = tempfile::tempdir().unwrap();
        let summary = "# Summary\n\n- [1. One](01-one.md)\n  - [1.A Code](ch01-code.md)\n- [2. Two](02-two.md)\n";
        let part = "# Code\n\nThe rest.\n\n```rust\n//@save\n/// Four.\npub fn four() -> i64 { two() + two() }\n```\n";
        let files = [("01-one.md", CH1), ("ch01-code.md", part), ("02-two.md", CH2)];
        let book = book_with_summary(tmp.path(), summary, &files).unwrap();
        assert_eq!(book.ids(), ["01", "02"]);
        let ch1 = &book.chapters[0];
        assert_eq!((ch1.parts.len(), ch1.parts[0].file.as_str()), (1, "ch01-code.md"));
        assert_eq!(ch1.saved_blocks().count(), 3, "the part's block is the chapter's third");
        let tangled = tangle_book(&book).unwrap();
        write(&book, &tangled, &tmp.path().join("agentrl")).unwrap();
        let m1 = std::fs::read_to_string(tmp.path().join("agentrl/src/ch01_one.rs")).unwrap();
        assert!(m1.contains("// generated from book/src/ch01-code.md, saved block 3\n/// Four."), "{m1}");
        let page = std::fs::read_to_string(tmp.path().join("book/src/library.md")).unwrap();
        assert!(page.contains("[`four() -> i64`](ch01-code.md#arl-four)"), "links to the part:\n{page}");
        assert!(page.contains("[`one() -> i64`](01-one.md#arl-one)"), "{page}");
        // where the generated line came from: the part's file and line
        let module = tangled.crate_files.iter().find(|f| f.rel_path.ends_with("ch01_one.rs")).unwrap();
        let k = module.content.lines().position(|l| l.starts_with("pub fn four")).unwrap();
        let (path, line) = module.line_map[k].clone().unwrap();
        assert_eq!((path.file_name().unwrap().to_str().unwrap(), line), ("ch01-code.md", 8));
    }

    #[test]
    fn a_code_page_with_a_run_block_or_not_nested_is_refused_by_name_and_line() {
        let tmp = tempfile::tempdir().unwrap();
        let summary = "# Summary\n\n- [1. One](01-one.md)\n  - [1.A Code](ch01-code.md)\n";
        let part = "# Code\n\n```rust\nprintln!(\"hi\");\n```\n";
        let err = book_with_summary(tmp.path(), summary, &[("01-one.md", CH1), ("ch01-code.md", part)]);
        let err = err.unwrap_err().to_string();
        assert!(err.contains("ch01-code.md:3: a code page of chapter 01 holds saved blocks and prose only"), "{err}");

        // not nested: a page like sources.md, where a rust block is refused
        let tmp = tempfile::tempdir().unwrap();
        let summary = "# Summary\n\n- [1. One](01-one.md)\n- [1.A Code](ch01-code.md)\n";
        let part = "# Code\n\n```rust\n//@save\n/// Four.\npub fn four() -> i64 { 4 }\n```\n";
        let err = book_with_summary(tmp.path(), summary, &[("01-one.md", CH1), ("ch01-code.md", part)]);
        let err = err.unwrap_err().to_string();
        assert!(err.contains("ch01-code.md:3: a ```rust block in a page that is not a chapter"), "{err}");
    }

    #[test]
    fn a_private_item_is_listed_without_a_rustdoc_link() {
        // rustdoc --no-deps documents no private item: an [API] link to one would be dead
        let ch = "# 1\n\n```rust\n//@save\n/// Helper.\nfn helper() -> i64 { 1 }\n\
                  /// Public.\npub fn public() -> i64 { helper() }\n```\n";
        let tmp = tempfile::tempdir().unwrap();
        let book = book_in(tmp.path(), &[("01-one.md", ch)]);
        write(&book, &tangle_book(&book).unwrap(), &tmp.path().join("agentrl")).unwrap();
        let page = std::fs::read_to_string(tmp.path().join("book/src/library.md")).unwrap();
        let row = |name: &str| page.lines().find(|l| l.contains(&format!("arl-{name}\""))).unwrap();
        assert!(row("helper").ends_with("Helper. (private to its module) |"), "{page}");
        assert!(!row("helper").contains("api/agentrl"), "{page}");
        assert!(row("public").contains("[API](api/agentrl/ch01_one/fn.public.html)"), "{page}");
    }

    #[test]
    fn tangle_writes_modules_reexports_and_reference_then_check_sees_edits() {
        let tmp = tempfile::tempdir().unwrap();
        let book = book_in(tmp.path(), &[("01-one.md", CH1), ("02-two.md", CH2)]);
        let out = tmp.path().join("agentrl");
        let tangled = tangle_book(&book).unwrap();
        assert_eq!(stale(&book, &tangled, &out).len(), 5, "nothing written yet: Cargo.toml, lib.rs, 2 modules, the page");
        write(&book, &tangled, &out).unwrap();
        assert!(stale(&book, &tangled, &out).is_empty());

        let lib = std::fs::read_to_string(out.join("src/lib.rs")).unwrap();
        assert!(lib.contains("pub mod ch01_one;") && lib.contains("pub use ch02_two::*;"), "{lib}");
        let m1 = std::fs::read_to_string(out.join("src/ch01_one.rs")).unwrap();
        assert_eq!(m1.matches("use std::fmt;").count(), 1, "identical uses are merged:\n{m1}");
        assert!(m1.contains("// generated from book/src/01-one.md, saved block 1\n/// One."), "{m1}");
        let page = std::fs::read_to_string(tmp.path().join("book/src/library.md")).unwrap();
        assert!(
            page.contains(
                "| <a id=\"arl-two\"></a>[`two() -> i64`](01-one.md#arl-two) | Two, from one. \
                 [API](api/agentrl/ch01_one/fn.two.html) |"
            ),
            "{page}"
        );

        // Editing a chapter makes its module and the page stale; --check names them.
        let edited = CH2.replace("+ 1", "+ 2").replace("Three,", "Four,");
        let book = book_in(tmp.path(), &[("01-one.md", CH1), ("02-two.md", &edited)]);
        let tangled = tangle_book(&book).unwrap();
        let stale_paths = stale(&book, &tangled, &out);
        assert_eq!(stale_paths, vec![out.join("src/ch02_two.rs"), tmp.path().join("book/src/library.md")]);

        // A removed chapter leaves an orphan module, which check reports and write removes.
        let book = book_in(tmp.path(), &[("01-one.md", CH1)]);
        let tangled = tangle_book(&book).unwrap();
        assert!(stale(&book, &tangled, &out).contains(&out.join("src/ch02_two.rs")));
        assert_eq!(write(&book, &tangled, &out).unwrap(), vec![out.join("src/ch02_two.rs")]);
        assert!(!out.join("src/ch02_two.rs").exists());
        assert!(stale(&book, &tangled, &out).is_empty());

        // Files tangle never writes (cargo would build them) are reported, and kept by write.
        for extra in ["build.rs", "src/extra/mod.rs", "src/bin/x.rs"] {
            std::fs::create_dir_all(out.join(extra).parent().unwrap()).unwrap();
            std::fs::write(out.join(extra), "fn main() {}\n").unwrap();
        }
        std::fs::create_dir_all(out.join("target/debug")).unwrap();
        std::fs::write(out.join("target/debug/x"), "").unwrap();
        std::fs::write(out.join("Cargo.lock"), "").unwrap();
        let reasons = stale_reasons(&book, &tangled, &out);
        let foreign: Vec<_> = reasons.iter().filter(|(_, why)| *why == Staleness::NotGenerated).map(|(p, _)| p.clone()).collect();
        assert_eq!(foreign, vec![out.join("build.rs"), out.join("src/bin/x.rs"), out.join("src/extra/mod.rs")]);
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        write(&book, &tangled, &out).unwrap();
        assert!(out.join("build.rs").exists(), "write removes only old chapter modules");
        std::fs::remove_file(out.join("src/lib.rs")).unwrap();
        assert!(stale_reasons(&book, &tangled, &out).contains(&(out.join("src/lib.rs"), Staleness::Missing)));
    }

    #[test]
    fn summaries_on_the_reference_page_keep_bars_and_dollars_as_text() {
        let tmp = tempfile::tempdir().unwrap();
        let ch = "```rust\n//@save\n/// Costs $5 | or $x$.\npub fn cost() -> i64 { 5 }\n```\n";
        let book = book_in(tmp.path(), &[("01-one.md", ch)]);
        let page = tangle_book(&book).unwrap().reference.content;
        assert!(page.contains("| Costs \\$5 \\| or \\$x\\$. [API]("), "{page}");
    }

    #[test]
    fn a_summary_line_naming_a_chapter_without_a_link_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let book = book_in(tmp.path(), &[("01-one.md", CH1), ("02-two.md", CH2)]);
        let summary = book.dir.join("src/SUMMARY.md");
        let text = std::fs::read_to_string(&summary).unwrap().replace("[02-two.md](02-two.md)", "[Two] (02-two.md)");
        std::fs::write(&summary, text).unwrap();
        let err = Book::load(&book.dir).err().unwrap();
        assert_eq!(err.line, 4, "{err}");
        assert!(err.message.contains("names 02-two.md but holds no link to it"), "{err}");
    }

    #[test]
    fn a_commented_out_summary_line_is_ignored_and_math_in_a_title_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let book = book_in(tmp.path(), &[("01-one.md", CH1), ("02-two.md", CH2)]);
        let summary = book.dir.join("src/SUMMARY.md");
        let original = std::fs::read_to_string(&summary).unwrap();
        let line = original.lines().find(|l| l.contains("(02-two.md)")).unwrap().to_string();
        std::fs::write(&summary, original.replace(&line, &format!("<!--\n{line}\n-->"))).unwrap();
        let loaded = Book::load(&book.dir).unwrap();
        assert_eq!(loaded.chapters.len(), 1, "the commented-out chapter is not part of the book");
        let titled = original.replace("[02-two.md](02-two.md)", "[2. Two $A_t$](02-two.md)");
        std::fs::write(&summary, titled).unwrap();
        let err = Book::load(&book.dir).err().unwrap();
        assert_eq!(err.line, 4, "{err}");
        assert!(err.message.contains("holds `$`: titles are plain text"), "{err}");
    }

    #[test]
    fn a_name_saved_twice_in_one_chapter_names_both_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let ch = "```rust\n//@save\nfn f() {}\n```\n\n```rust\n//@save\nstruct f;\n```\n";
        let book = book_in(tmp.path(), &[("01-x.md", ch)]);
        let err = tangle_book(&book).err().unwrap();
        assert_eq!(err.line, 8);
        assert!(err.message.contains("`f` is saved twice: first at") && err.message.contains("01-x.md:3"), "{err}");
    }
}
