//! The book model and the tangler.
//!
//! [`book`] parses chapters (SUMMARY order, fenced blocks, recorded outputs, with byte
//! offsets and Markdown lines); [`library`] turns `//@save` blocks into the `agentrl`
//! crate and its reference page. The checker and the renderer use this model instead of
//! parsing Markdown again.

pub mod book;
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
