use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Build each selected chapter against the library tangled from the chapters before it,
/// run its blocks as one program, and diff each block's stdout with its recorded Output.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Chapters to check, as with --chapters: `cargo run -p checker -- 02 05-07` (joined with
    /// --chapters when both are given: `--chapters 00 01` checks 00 and 01).
    #[arg(value_name = "CHAPTERS")]
    positional: Vec<String>,
    /// Chapters to check: `all`, `02`, `02,05-07`, `A` [default: all].
    #[arg(long)]
    chapters: Option<String>,
    /// Chapter programs to run at once (each on one intra-op thread, so outputs do not
    /// change); builds run one at a time and count as one of them, so a build and the
    /// programs never oversubscribe the cores [default: the number of cores].
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
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
    /// CPU seconds every chapter program may use before it is killed [default: per chapter,
    /// 5 × the CPU time it used when its outputs were last recorded (book/cpu-seconds.json,
    /// written by --refresh), at least 60 s; 120 s for a chapter with no record].
    #[arg(long, value_name = "SECS")]
    time_limit: Option<u64>,
    /// Find (or install) libtorch and the Qwen3 tokenizer files, print the shell exports
    /// (LIBTORCH, LD_LIBRARY_PATH, AGENTRL_QWEN3_DIR, AGENTRL_LABS_DIR), and exit.
    #[arg(long)]
    print_env: bool,
    /// Check, then check again whenever a chapter or a lab results file changes (saved code
    /// re-checks the chapters after it too); with --refresh, record new outputs each time.
    /// Ctrl-C stops it, and every program it started.
    #[arg(long)]
    watch: bool,
    /// After each chapter that ran, list its run blocks' wall times at their Markdown lines
    /// (blocks under 0.05 s summed into one line).
    #[arg(long)]
    timings: bool,
}

/// Run from a subdirectory of the repository, find its root (the folder holding
/// `book/src/SUMMARY.md`) and work from there, so every default path holds.
fn go_to_repository_root() -> Result<(), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    for dir in cwd.ancestors() {
        if dir.join("book/src/SUMMARY.md").is_file() {
            if dir != cwd {
                std::env::set_current_dir(dir).map_err(|e| format!("cannot change to {}: {e}", dir.display()))?;
            }
            return Ok(());
        }
    }
    Err(format!(
        "no book/src/SUMMARY.md in {} or any folder above it: run the checker from the repository root \
         (or pass --book PATH)",
        cwd.display()
    ))
}

/// Paths the environment gives relative to where the checker was started: made absolute
/// before it changes to the repository root (and before they are exported or handed to builds).
const PATH_VARIABLES: &[&str] = &["LIBTORCH", "AGENTRL_CACHE", "XDG_CACHE_HOME", "HOME", checker::qwen3::ENV_VAR];

/// `value` quoted for a POSIX shell (`eval "$(checker --print-env)"`).
fn shell_quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = checker::process::install() {
        eprintln!("error: cannot handle Ctrl-C (so it could leave chapter programs running): {e}");
        return ExitCode::from(2);
    }
    // What `cargo run` / `cargo test` put on LD_LIBRARY_PATH for themselves is not the user's:
    // chapter programs, their cache keys and --print-env's exports must not depend on it.
    if let Some(value) = std::env::var("LD_LIBRARY_PATH").ok().filter(|v| !v.is_empty()) {
        let exe = std::env::current_exe().ok();
        let cargo = std::env::var_os("CARGO").map(std::path::PathBuf::from);
        let kept = checker::libtorch::without_cargo_dirs(&value, exe.as_deref().and_then(|e| e.parent()), cargo.as_deref());
        if kept.is_empty() {
            std::env::remove_var("LD_LIBRARY_PATH");
        } else if kept != value {
            std::env::set_var("LD_LIBRARY_PATH", kept);
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        for name in PATH_VARIABLES {
            if let Some(value) = std::env::var_os(name).filter(|v| !v.is_empty()) {
                if std::path::Path::new(&value).is_relative() {
                    let joined = cwd.join(value);
                    std::env::set_var(name, std::fs::canonicalize(&joined).unwrap_or(joined));
                }
            }
        }
    }
    if cli.book == std::path::Path::new("book") && !cli.book.join("src/SUMMARY.md").is_file() {
        if let Err(e) = go_to_repository_root() {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    if cli.print_env {
        let mut announce = |m: &str| eprintln!("checker: {m}");
        return match checker::environment(&cli.book, &mut announce) {
            Ok(env) => {
                for (k, v) in env {
                    println!("export {k}={}", shell_quoted(&v));
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
        chapters: {
            let given: Vec<String> = cli.chapters.into_iter().chain(cli.positional).collect();
            if given.is_empty() { "all".to_string() } else { given.join(",") }
        },
        refresh: cli.refresh,
        force: cli.force,
        timings: cli.timings,
        work_dir: cli.work_dir,
        cargo_target_dir: cli.cargo_target_dir,
        lockfile: cli.lockfile,
        time_limit: cli.time_limit.map(Duration::from_secs),
        jobs: cli
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
            .max(1),
    };
    let mut stdout = std::io::stdout();
    if cli.watch {
        return match checker::watch::watch(&opts, &mut stdout) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if is_broken_pipe(&e) => ExitCode::from(128 + libc::SIGPIPE as u8),
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    match checker::check(&opts, &mut stdout) {
        Ok(summary) if summary.failed == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        // `checker | head`: the reader left. Stop quietly, as a process killed by SIGPIPE would
        // (the running programs were stopped when the write failed).
        Err(e) if is_broken_pipe(&e) => ExitCode::from(128 + libc::SIGPIPE as u8),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_are_quoted_for_the_shell() {
        assert_eq!(super::shell_quoted("/a b/c"), "'/a b/c'");
        assert_eq!(super::shell_quoted("/tmp/o'brien"), "'/tmp/o'\\''brien'");
    }
}
