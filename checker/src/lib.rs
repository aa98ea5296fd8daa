//! The book checker: build each chapter against a library tangled from the chapters
//! before it, run its blocks as one program, and compare each block's stdout with the
//! recorded `Output:` block (or rewrite those blocks with `--refresh`).

pub mod build;
pub mod libtorch;
pub mod program;
pub mod refresh;
pub mod run;
pub mod select;

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use similar::TextDiff;
use tangle::{Book, Chapter, CodeBlock};

use build::{BuildOutcome, ChapterCrate};
use run::Ending;

/// What to check and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub book: PathBuf,
    pub chapters: String,
    pub refresh: bool,
    pub force: bool,
    pub work_dir: PathBuf,
    pub cargo_target_dir: Option<PathBuf>,
    pub lockfile: Option<PathBuf>,
    pub time_limit: Duration,
}

/// Chapters passed and failed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
}

/// An error that stops the whole run before any chapter is checked (exit code 2).
#[derive(Debug)]
pub struct SetupError(pub String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// The command that refreshes `ids`, as the user should type it.
fn refresh_command(opts: &Options, ids: &str) -> String {
    let mut cmd = format!("cargo run -p checker -- --chapters {ids} --refresh");
    if opts.book != Path::new("book") {
        let _ = write!(cmd, " --book {}", opts.book.display());
    }
    cmd
}

/// Check (or refresh) the selected chapters, writing progress and reports to `out`.
pub fn check(opts: &Options, out: &mut dyn Write) -> Result<Summary> {
    let book = Book::load(&opts.book).map_err(|e| SetupError(format!("{e}")))?;
    let selected = select::select(&book, &opts.chapters).map_err(SetupError)?;
    let mut announce = |msg: &str| {
        eprintln!("checker: {msg}");
    };
    let libtorch = libtorch::locate_or_install(&mut announce).map_err(|e| SetupError(format!("{e:#}")))?;
    let env = libtorch.env();
    let target_dir = opts.cargo_target_dir.clone().unwrap_or_else(|| opts.work_dir.join("target"));
    let lockfile = opts.lockfile.clone().or_else(|| {
        let default = opts.book.parent().unwrap_or(Path::new(".")).join("agentrl").join("Cargo.lock");
        default.exists().then_some(default)
    });
    let mut summary = Summary::default();
    let mut failed_ids = Vec::new();
    let mut refreshable = Vec::new();
    for &index in &selected {
        let chapter = &book.chapters[index];
        let verdict = check_chapter(opts, &book, index, &env, &target_dir, lockfile.as_deref(), out)
            .with_context(|| format!("checking chapter {}", chapter.id))?;
        match verdict {
            Verdict::Passed => summary.passed += 1,
            Verdict::OutputsDiffer => {
                summary.failed += 1;
                failed_ids.push(chapter.id.clone());
                refreshable.push(chapter.id.clone());
            }
            Verdict::Failed => {
                summary.failed += 1;
                failed_ids.push(chapter.id.clone());
            }
        }
        out.flush()?;
    }
    if opts.refresh {
        retangle(opts, out)?;
    }
    if !failed_ids.is_empty() {
        writeln!(out, "failed: {}", failed_ids.join(", "))?;
    }
    if !refreshable.is_empty() && !opts.refresh {
        writeln!(
            out,
            "if the new outputs are right, record them with: {}",
            refresh_command(opts, &refreshable.join(","))
        )?;
    }
    writeln!(out, "{} passed, {} failed", summary.passed, summary.failed)?;
    Ok(summary)
}

/// After a refresh, keep the book's generated crate in step: its `// generated from` line
/// references move when Output blocks grow or shrink. Only the crate beside the book
/// (`agentrl/` next to `book/`) is rewritten, and only when it exists.
fn retangle(opts: &Options, out: &mut dyn Write) -> Result<()> {
    let crate_dir = opts.book.parent().unwrap_or(Path::new(".")).join("agentrl");
    if !crate_dir.join("Cargo.toml").exists() {
        return Ok(());
    }
    let book = Book::load(&opts.book).map_err(|e| SetupError(format!("{e}")))?;
    let Ok(tangled) = tangle::tangle_book(&book) else {
        return Ok(()); // the chapter reports already name the broken saved block
    };
    if !tangle::stale(&book, &tangled, &crate_dir).is_empty() {
        tangle::write(&book, &tangled, &crate_dir)?;
        writeln!(out, "re-tangled {} and {} (line references moved)", crate_dir.display(), book.dir.join(&tangled.reference.rel_path).display())?;
    }
    Ok(())
}

/// How one chapter came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Passed,
    /// Ran to the end, but some block printed other than its recorded Output.
    OutputsDiffer,
    /// Did not compile, panicked, hung, crashed, or broke a book rule.
    Failed,
}

fn label(chapter: &Chapter) -> String {
    format!("chapter {} ({})", chapter.id, chapter.path.display())
}

fn check_chapter(
    opts: &Options,
    book: &Book,
    index: usize,
    env: &[(String, String)],
    target_dir: &Path,
    lockfile: Option<&Path>,
    out: &mut dyn Write,
) -> Result<Verdict> {
    let chapter = &book.chapters[index];
    // The prefix library: chapters before this one only, so a later name fails to compile.
    let prepared = tangle::library::crate_files(book, index, false)
        .and_then(|prefix| tangle::library::collect(book, index + 1).map(|_| prefix))
        .and_then(|prefix| program::generate(book, index).map(|p| (prefix, p)));
    let (prefix, program) = match prepared {
        Ok(x) => x,
        Err(e) => {
            writeln!(out, "{}: FAILED\nerror: {e}\n", label(chapter))?;
            return Ok(Verdict::Failed);
        }
    };
    let work = std::path::absolute(&opts.work_dir)?;
    let package = format!("chapter-{}-{}", chapter.id.to_ascii_lowercase(), &hex(work.display().to_string().as_bytes())[..8]);
    let krate = ChapterCrate { dir: work.join(format!("ch-{}", chapter.id)), package, main_rs: program.main_rs, prefix };

    let key = cache_key(&krate, chapter, env, opts.time_limit);
    let stamp = work.join("cache").join(format!("{}.pass", chapter.id));
    if !opts.force && !opts.refresh && std::fs::read_to_string(&stamp).ok().as_deref() == Some(key.as_str()) {
        writeln!(out, "{}: ok (cached; --force re-runs)", label(chapter))?;
        return Ok(Verdict::Passed);
    }

    krate.write(lockfile)?;
    let started = Instant::now();
    let outcome = build::build(&krate, target_dir, env)?;
    let build_time = started.elapsed();
    let executable = match outcome {
        BuildOutcome::Built { executable } => executable,
        BuildOutcome::Failed { report } => {
            writeln!(out, "{}: FAILED to compile (build {:.1} s){}\n{report}", label(chapter), build_time.as_secs_f64(), if opts.refresh { "; left untouched" } else { "" })?;
            return Ok(Verdict::Failed);
        }
    };
    let result = run::run(&executable, env, opts.time_limit)?;
    let times = format!("build {:.1} s, run {:.1} s", build_time.as_secs_f64(), result.elapsed.as_secs_f64());

    let runs: Vec<&CodeBlock> = program.run_blocks.iter().map(|&i| &chapter.blocks[i]).collect();
    let mut report = String::new();
    let mut printed: Vec<(&CodeBlock, String)> = Vec::new();
    let mut mismatches = 0;
    let mut non_utf8 = false;
    for (block, bytes) in runs.iter().zip(&result.blocks) {
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(
                    report,
                    "{}:{}: the block printed output that is not UTF-8 (first bad byte at offset {} of its output); \
                     chapters print text only, with println!\n",
                    chapter.path.display(),
                    block.fence_line,
                    e.valid_up_to()
                );
                mismatches += 1;
                non_utf8 = true;
                continue;
            }
        };
        printed.push((block, text.to_string()));
        if !opts.refresh {
            if let Some(msg) = compare(chapter, block, text) {
                report.push_str(&msg);
                mismatches += 1;
            }
        }
    }
    let completed = result.blocks.len();
    let ending_failed = match &result.ending {
        Ending::Finished => false,
        Ending::Panicked { location, message } => {
            let block = runs.get(completed);
            let at = location_in_book(&krate, location);
            let _ = writeln!(
                report,
                "{}:{}: the block panicked: {message}\n  panic at {at}",
                chapter.path.display(),
                block.map(|b| b.fence_line).unwrap_or(0),
            );
            let skipped = runs.len().saturating_sub(completed + 1);
            if skipped > 0 {
                let _ = writeln!(report, "  {skipped} later block(s) did not run");
            }
            report.push('\n');
            true
        }
        Ending::TimedOut { limit } => {
            let block = runs.get(completed);
            let _ = writeln!(
                report,
                "{}:{}: killed after the time limit of {} s while this block was running (raise it with --time-limit SECS)\n",
                chapter.path.display(),
                block.map(|b| b.fence_line).unwrap_or(0),
                limit.as_secs()
            );
            true
        }
        Ending::Crashed { status, stderr_tail } => {
            let block = runs.get(completed);
            let _ = writeln!(
                report,
                "{}:{}: the program {status} while this block was running\n{stderr_tail}\n",
                chapter.path.display(),
                block.map(|b| b.fence_line).unwrap_or(0),
            );
            true
        }
    };
    if completed == runs.len() && matches!(result.ending, Ending::Finished) && !result.partial.is_empty() {
        let _ = writeln!(report, "{}: the program printed after its last block ({} bytes)\n", chapter.path.display(), result.partial.len());
        mismatches += 1;
    }

    if opts.refresh {
        let new_source = refresh::rewrite(chapter, &printed);
        let changed = new_source != chapter.source;
        if changed {
            refresh::write_atomic(&chapter.path, &new_source)?;
        }
        let note = if changed { "Output blocks rewritten" } else { "already up to date" };
        if ending_failed || mismatches > 0 {
            writeln!(out, "{}: FAILED ({times}); {note} for the {completed} block(s) that ran\n{report}", label(chapter))?;
            return Ok(Verdict::Failed);
        }
        writeln!(out, "{}: refreshed, {note} ({times})", label(chapter))?;
        // The refreshed chapter now matches this run: remember it.
        let mut refreshed = chapter.clone();
        refreshed.source = new_source;
        write_stamp(&stamp, &cache_key(&krate, &refreshed, env, opts.time_limit))?;
        return Ok(Verdict::Passed);
    }
    if ending_failed || mismatches > 0 {
        writeln!(out, "{}: FAILED ({times})\n{report}", label(chapter))?;
        return Ok(if ending_failed || non_utf8 { Verdict::Failed } else { Verdict::OutputsDiffer });
    }
    writeln!(out, "{}: ok ({times})", label(chapter))?;
    write_stamp(&stamp, &key)?;
    Ok(Verdict::Passed)
}

/// A mismatch report for one block, or None when its output is as recorded.
fn compare(chapter: &Chapter, block: &CodeBlock, printed: &str) -> Option<String> {
    let actual = refresh::recorded_form(printed);
    let (expected, line, what) = match &block.output {
        Some(o) if o.text == actual => return None,
        Some(o) => (o.text.as_str(), o.line, "printed something other than its recorded Output"),
        None if actual.is_empty() => return None,
        None => ("", block.fence_line, "prints, but has no Output block after it"),
    };
    let what = if actual.is_empty() { "no longer prints anything, but has an Output block" } else { what };
    let diff = TextDiff::from_lines(expected, actual.as_str());
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("recorded {}:{line}", chapter.path.display()), "printed by the block")
        .to_string();
    Some(format!(
        "{}:{line}: the block at line {} {what}:\n{unified}\n",
        chapter.path.display(),
        block.fence_line
    ))
}

/// `file:line:col` of generated code, as the Markdown location when it came from the book.
fn location_in_book(krate: &ChapterCrate, location: &str) -> String {
    let mut parts = location.rsplitn(3, ':');
    let (col, line, file) = (parts.next(), parts.next(), parts.next());
    if let (Some(col), Some(Ok(line)), Some(file)) = (col, line.map(str::parse::<usize>), file) {
        if let Some((path, md_line)) = krate.origin(file, line) {
            return format!("{}:{md_line}:{col}", path.display());
        }
    }
    location.to_string()
}

/// Lower-case hex of the SHA-256 of `bytes`.
fn hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

fn to_hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Everything a chapter's result depends on: its text, its prefix, the program, the environment.
fn cache_key(krate: &ChapterCrate, chapter: &Chapter, env: &[(String, String)], limit: Duration) -> String {
    let mut h = Sha256::new();
    h.update(concat!("checker ", env!("CARGO_PKG_VERSION"), "\n"));
    h.update(chapter.source.as_bytes());
    h.update(krate.cargo_toml().as_bytes());
    h.update(krate.prefix_cargo_toml().as_bytes());
    h.update(krate.main_rs.content.as_bytes());
    for f in &krate.prefix {
        h.update(f.rel_path.display().to_string().as_bytes());
        h.update(f.content.as_bytes());
    }
    for (k, v) in env.iter().filter(|(k, _)| k == "LIBTORCH") {
        h.update(format!("{k}={v}\n").as_bytes());
    }
    for (k, v) in run::DETERMINISM_ENV {
        h.update(format!("{k}={v}\n").as_bytes());
    }
    h.update(limit.as_millis().to_le_bytes());
    to_hex(&h.finalize())
}

fn write_stamp(path: &Path, key: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, key)?;
    Ok(())
}
