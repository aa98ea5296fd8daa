//! `mdbook-agentrl`: the book's mdBook preprocessor. mdBook runs it (see `book/book.toml`);
//! `mdbook-agentrl page FILE` prints one page as the preprocessor rewrites it.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "mdbook-agentrl", about = "mdBook preprocessor for the agentrl book")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// mdBook's question: exit 0 if the preprocessor applies to RENDERER.
    Supports { renderer: String },
    /// Print a Markdown page (e.g. book/src/02-rl-fundamentals.md) as it is rewritten.
    Page {
        file: PathBuf,
        /// The page's title in SUMMARY.md (used for the library link's anchor).
        #[arg(long, default_value = "")]
        title: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Supports { renderer }) => {
            return if render::preprocess::supports(&renderer) { ExitCode::SUCCESS } else { ExitCode::FAILURE };
        }
        Some(Command::Page { file, title }) => page(&file, &title),
        None => preprocess(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mdbook-agentrl: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn preprocess() -> anyhow::Result<()> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let output = render::preprocess::run(&input)?;
    std::io::stdout().write_all(output.as_bytes())?;
    Ok(())
}

fn page(file: &std::path::Path, title: &str) -> anyhow::Result<()> {
    let content = std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let src_dir = file.parent().unwrap_or(std::path::Path::new("."));
    let out = render::page::render_page(&render::page::Page {
        source_path: &name,
        src_dir,
        title,
        code_page_of: None,
        content: &content,
    })?;
    print!("{out}");
    Ok(())
}
