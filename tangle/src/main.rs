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
