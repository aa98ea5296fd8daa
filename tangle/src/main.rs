use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Write the `agentrl` crate and `book/src/library.md` from the book's `//@save` blocks.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The book directory (holds src/SUMMARY.md).
    #[arg(long, default_value = "book")]
    book: PathBuf,
    /// Where the generated crate goes.
    #[arg(long, default_value = "agentrl")]
    out: PathBuf,
    /// Write nothing; exit 1 naming each file that differs from a fresh tangle.
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Run from a subdirectory, work from the repository root (the folder holding book/src/SUMMARY.md).
    if cli.book == std::path::Path::new("book") && !cli.book.join("src/SUMMARY.md").is_file() {
        let cwd = std::env::current_dir().unwrap_or_default();
        match cwd.ancestors().find(|d| d.join("book/src/SUMMARY.md").is_file()) {
            Some(root) => {
                if let Err(e) = std::env::set_current_dir(root) {
                    eprintln!("error: cannot change to {}: {e}", root.display());
                    return ExitCode::from(2);
                }
            }
            None => {
                eprintln!(
                    "error: no book/src/SUMMARY.md in {} or any folder above it: run tangle from the repository root (or pass --book PATH)",
                    cwd.display()
                );
                return ExitCode::from(2);
            }
        }
    }
    let book = match tangle::Book::load(&cli.book) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let tangled = match tangle::tangle_book(&book) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.check {
        let stale = tangle::stale(&book, &tangled, &cli.out);
        if stale.is_empty() {
            println!("agentrl is up to date with the book ({} chapters)", book.chapters.len());
            return ExitCode::SUCCESS;
        }
        for path in &stale {
            eprintln!("stale: {} differs from a fresh tangle", path.display());
        }
        eprintln!("run `cargo run -p tangle` and commit the result");
        return ExitCode::FAILURE;
    }
    if let Err(e) = tangle::write(&book, &tangled, &cli.out) {
        eprintln!("error: writing {}: {e}", cli.out.display());
        return ExitCode::from(2);
    }
    let items: usize = tangled.crate_files.iter().map(|f| f.content.matches("// generated from ").count()).sum();
    println!(
        "wrote {} ({} files, {} items) and {}",
        cli.out.display(),
        tangled.crate_files.len(),
        items,
        book.dir.join(&tangled.reference.rel_path).display()
    );
    ExitCode::SUCCESS
}
