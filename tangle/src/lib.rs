//! The book model and the tangler.
//!
//! [`book`] parses chapters (SUMMARY order, fenced blocks, recorded outputs, with byte
//! offsets and Markdown lines); [`library`] turns `//@save` blocks into the `agentrl`
//! crate and its reference page. The checker and the renderer use this model instead of
//! parsing Markdown again. [`labs`] hashes the code a lab ran and checks its results files.

pub mod book;
pub mod labs;
pub mod library;

pub use book::{BlockKind, Book, BookError, Chapter, CodeBlock, OutputBlock};

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

/// Write `crate_dir` and the reference page; removes modules of chapters that are gone.
pub fn write(book: &Book, tangled: &Tangled, crate_dir: &Path) -> std::io::Result<()> {
    library::write_files(crate_dir, &tangled.crate_files)?;
    for orphan in library::orphan_modules(crate_dir, &tangled.crate_files) {
        std::fs::remove_file(orphan)?;
    }
    library::write_files(&book.dir, std::slice::from_ref(&tangled.reference))
}

/// Paths whose committed content differs from a fresh tangle.
pub fn stale(book: &Book, tangled: &Tangled, crate_dir: &Path) -> Vec<PathBuf> {
    let mut stale = library::stale_files(crate_dir, &tangled.crate_files);
    stale.extend(library::orphan_modules(crate_dir, &tangled.crate_files));
    stale.extend(library::stale_files(&book.dir, std::slice::from_ref(&tangled.reference)));
    stale
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
        assert!(m1.contains(&format!("// generated from {}, saved block 1\n/// One.", book.chapters[0].path.display())), "{m1}");
        let page = std::fs::read_to_string(tmp.path().join("book/src/library.md")).unwrap();
        assert!(page.contains("| `two() -> i64` | Two, from one. |"), "{page}");

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
        write(&book, &tangled, &out).unwrap();
        assert!(!out.join("src/ch02_two.rs").exists());
        assert!(stale(&book, &tangled, &out).is_empty());
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
