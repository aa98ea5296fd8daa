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
    /// Where the generated crate goes [default: agentrl/ beside the book folder].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write nothing; exit 1 naming each file that differs from a fresh tangle, and each
    /// lab results file (labs/results/*.json) whose code hash no longer matches the code.
    #[arg(long)]
    check: bool,
    /// With --check: check agentrl/ and library.md only, not lab results (scripts that are
    /// about to regenerate lab results or draw figures need only the crate to be current).
    #[arg(long, requires = "check")]
    skip_labs: bool,
    /// Print the code hash of lab NAME (labs/src/bin/NAME.rs) and exit.
    #[arg(long, value_name = "NAME", conflicts_with = "check")]
    lab_hash: Option<String>,
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
    // The repository root: the folder holding the book folder (agentrl/ and labs/ are there).
    let root = match cli.book.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Some(lab) = &cli.lab_hash {
        return match tangle::labs::code_hash(&root, lab) {
            Ok(hash) => {
                println!("{hash}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    let book = match tangle::Book::load(&cli.book) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for path in &book.unlisted {
        eprintln!(
            "warning: {} is not listed in {}, so it is not part of the book and its saved blocks are not tangled",
            path.display(),
            cli.book.join("src/SUMMARY.md").display()
        );
    }
    // The crate sits beside the book folder, as labs/ does (the lab check reads it there).
    let out = cli.out.clone().unwrap_or_else(|| root.join("agentrl"));
    let tangled = match tangle::tangle_book(&book) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.check {
        let stale = tangle::stale_reasons(&book, &tangled, &out);
        if stale.is_empty() {
            println!("agentrl is up to date with the book ({} chapters)", book.chapters.len());
        } else {
            for (path, why) in &stale {
                eprintln!("stale: {} {why}", path.display());
            }
            if stale.iter().any(|(_, why)| *why != tangle::Staleness::NotGenerated) {
                eprintln!("run `cargo run -p tangle` and commit the result");
            }
            if stale.iter().any(|(_, why)| *why == tangle::Staleness::NotGenerated) {
                eprintln!("remove the files tangle does not write (it removes old chapter modules itself)");
            }
        }
        let (problems, checked) =
            if cli.skip_labs { (Vec::new(), 0) } else { tangle::labs::check_results(&root) };
        let mut problems: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        if !cli.skip_labs {
            problems.extend(lab_code_problems(&book, &root));
        }
        if problems.is_empty() {
            if checked > 0 {
                println!("lab results are up to date with their code ({checked} file(s) in {})", tangle::labs::RESULTS_DIR);
            }
        } else {
            for problem in &problems {
                eprintln!("{problem}");
            }
            if !stale.is_empty() {
                eprintln!("(agentrl/ is stale too: re-tangle first, then rerun the labs)");
            }
        }
        return if stale.is_empty() && problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    match tangle::write(&book, &tangled, &out) {
        Ok(removed) => {
            for path in removed {
                println!("removed {} (no chapter saves it any more)", path.display());
            }
        }
        Err(e) => {
            eprintln!("error: writing {}: {e}", out.display());
            return ExitCode::from(2);
        }
    }
    for path in tangle::library::foreign_files(&out, &tangled.crate_files) {
        eprintln!("warning: {} is not written by tangle; remove it (the crate holds generated files only)", path.display());
    }
    let items: usize = tangled.crate_files.iter().map(|f| f.content.matches("// generated from ").count()).sum();
    println!(
        "wrote {} ({} files, {} items) and {}",
        out.display(),
        tangled.crate_files.len(),
        items,
        book.dir.join(&tangled.reference.rel_path).display()
    );
    // A new agentrl/ may have made lab results stale: say so now rather than at --check.
    for problem in tangle::labs::check_results(&root).0 {
        eprintln!("note: {problem}");
    }
    for problem in lab_code_problems(&book, &root) {
        eprintln!("note: {problem}");
    }
    ExitCode::SUCCESS
}

/// What would let a lab's code change without its results going stale: a name from a chapter
/// after the one it declares, or lab code outside the files the hash covers.
fn lab_code_problems(book: &tangle::Book, root: &std::path::Path) -> Vec<String> {
    let mut chapter_of = std::collections::HashMap::new();
    if let Ok(chapters) = tangle::library::collect(book, book.chapters.len()) {
        for ch in chapters {
            let Ok(number) = book.chapters[ch.chapter].id.parse::<u32>() else { continue };
            for name in ch.items.into_iter().filter_map(|item| item.name) {
                chapter_of.insert(name, number);
            }
        }
    }
    let mut problems = tangle::labs::undeclared_uses(root, &|name| chapter_of.get(name).copied());
    for file in tangle::labs::unhashed_lab_files(root) {
        problems.push(format!(
            "error: {file}: no lab's code hash covers it (the hash takes labs/src/lib.rs and the lab's own \
             labs/src/bin/NAME.rs): move the code into labs/src/lib.rs"
        ));
    }
    problems
}
