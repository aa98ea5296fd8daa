use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Build each selected chapter against the library tangled from the chapters before it,
/// run its blocks as one program, and diff each block's stdout with its recorded Output.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Chapters to check: `all`, `02`, `02,05-07`, `A`.
    #[arg(long, default_value = "all")]
    chapters: String,
    /// Rewrite the Output blocks from what the blocks print (nothing else in the file changes).
    #[arg(long)]
    refresh: bool,
    /// Re-run chapters even when nothing they depend on changed since they last passed.
    #[arg(long)]
    force: bool,
    /// The book directory (holds src/SUMMARY.md).
    #[arg(long, default_value = "book")]
    book: PathBuf,
    /// Where chapter programs are generated and built.
    #[arg(long, default_value = "target/checker")]
    work_dir: PathBuf,
    /// Cargo target directory for chapter programs [default: WORK_DIR/target].
    #[arg(long)]
    cargo_target_dir: Option<PathBuf>,
    /// Cargo.lock that pins the chapter programs' dependencies [default: agentrl/Cargo.lock beside the book].
    #[arg(long)]
    lockfile: Option<PathBuf>,
    /// Seconds a chapter program may run before it is killed.
    #[arg(long, default_value_t = 120)]
    time_limit: u64,
    /// Find (or install) libtorch, print the shell exports for it, and exit.
    #[arg(long)]
    print_env: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.print_env {
        let mut announce = |m: &str| eprintln!("checker: {m}");
        return match checker::libtorch::locate_or_install(&mut announce) {
            Ok(lt) => {
                for (k, v) in lt.env() {
                    println!("export {k}='{v}'");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let opts = checker::Options {
        book: cli.book,
        chapters: cli.chapters,
        refresh: cli.refresh,
        force: cli.force,
        work_dir: cli.work_dir,
        cargo_target_dir: cli.cargo_target_dir,
        lockfile: cli.lockfile,
        time_limit: Duration::from_secs(cli.time_limit),
    };
    let mut stdout = std::io::stdout();
    match checker::check(&opts, &mut stdout) {
        Ok(summary) if summary.failed == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
