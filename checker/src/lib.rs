//! The book checker: build each chapter against a library tangled from the chapters
//! before it, run its blocks as one program, and compare each block's stdout with the
//! recorded `Output:` block (or rewrite those blocks with `--refresh`).
//!
//! One chapter goes through these steps, each a function below or a module:
//! [`prepare`] (prefix library, program, cache key) → [`build_step`] ([`build`]) →
//! run ([`run`], on a worker thread, up to `--jobs` at once) → [`finish`]: judge the run
//! ([`compare`]), then either [`refresh_step`] ([`refresh`]) or [`report_step`].
//! [`check`] drives them: builds one after another, runs side by side, reports in book order.

pub mod build;
pub mod compare;
pub mod libtorch;
pub mod limits;
pub mod mkl;
pub mod progress;
pub mod process;
pub mod prose;
pub mod program;
pub mod qwen3;
pub mod refresh;
pub mod run;
pub mod select;
pub mod watch;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use tangle::{Book, BookError, Chapter, CodeBlock};

use build::{BuildOutcome, ChapterCrate};
use progress::Progress;
use refresh::Written;
use run::RunResult;

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
    /// `--time-limit SECS`: one CPU-time limit for every chapter. Without it each chapter's
    /// limit is derived from its recorded CPU time ([`limits`]).
    pub time_limit: Option<Duration>,
    /// Chapter programs run at once (each on one intra-op thread); at least 1.
    pub jobs: usize,
    /// After each chapter that ran, list its run blocks' wall times (`--timings`).
    pub timings: bool,
}

/// Chapters passed and failed (`failed` includes `skipped`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    /// Not built because a chapter they need does not compile.
    pub skipped: usize,
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

/// Everything chapter programs need in their environment, installing what is missing:
/// `LIBTORCH`, `LD_LIBRARY_PATH`, `LD_PRELOAD` (on a CPU with AVX2: the library that keeps
/// MKL on its AVX2 path, [`mkl`]), `AGENTRL_QWEN3_DIR`, and `AGENTRL_LABS_DIR` (the lab
/// results beside the book `book`, whether or not that folder exists yet).
pub fn environment(book: &Path, announce: &mut dyn FnMut(&str)) -> Result<Vec<(String, String)>> {
    let avx2 = {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    };
    let platform = platform_check(std::env::consts::OS, std::env::consts::ARCH, avx2);
    if let Some(warning) = platform.map_err(anyhow::Error::msg)? {
        announce(&warning);
    }
    let libtorch = libtorch::locate_or_install(announce)?;
    let mut env = libtorch.env();
    if avx2 {
        // MKL takes MKL_CBWR=AVX2 on AMD's CPUs too (mkl.rs); no-op on Intel's
        let shim = mkl::locate_or_build(&libtorch::cache_dir()?)?;
        env.push(("LD_PRELOAD".to_string(), shim.display().to_string()));
    }
    let qwen3 = qwen3::locate_or_install(announce)?;
    env.push((qwen3::ENV_VAR.to_string(), qwen3.display().to_string()));
    env.push((LABS_ENV_VAR.to_string(), labs_dir(book)?.display().to_string()));
    Ok(env)
}

/// Whether the book can be checked here: an error where the libtorch install cannot work
/// (it is the Linux wheel), a warning where it works but the recorded outputs cannot be
/// reproduced bit for bit (they assume ATen's and MKL's AVX2 code paths). The CPU's vendor
/// needs no check: MKL keeps its AVX2 path on AMD's CPUs too once told to ([`mkl`]).
fn platform_check(os: &str, arch: &str, avx2: bool) -> Result<Option<String>, String> {
    if os != "linux" {
        return Err(format!(
            "the checker runs on Linux (it installs and links the Linux libtorch wheel); this is \
             {os} {arch}: use a Linux x86-64 machine or container"
        ));
    }
    let differs = "so chapters that print floating-point values may differ in their last digits";
    Ok(match (arch, avx2) {
        ("x86_64", true) => None,
        ("x86_64", false) => Some(format!(
            "warning: this CPU has no AVX2; the book's outputs were recorded with ATen's AVX2 kernels, {differs}"
        )),
        _ => Some(format!("warning: the book's outputs were recorded on x86-64, this is {arch}, {differs}")),
    })
}

/// The variable that tells a chapter where the committed lab results are.
pub const LABS_ENV_VAR: &str = "AGENTRL_LABS_DIR";

/// The repository root of the book `book` (the folder holding it, and `agentrl/`, `labs/`).
fn root_of(book: &Path) -> &Path {
    book.parent().unwrap_or(Path::new(""))
}

/// The absolute path of the lab results beside the book: `ROOT/labs/results`.
pub fn labs_dir(book: &Path) -> Result<PathBuf> {
    let root = root_of(book);
    let root = if root.as_os_str().is_empty() { Path::new(".") } else { root };
    Ok(std::path::absolute(root)?.join(tangle::labs::RESULTS_DIR))
}

/// A digest of every lab results file and checkpoint (`ROOT/labs/results/*.json` and
/// `*.safetensors`, by name: name, length,
/// bytes), for the cache key: a regenerated results file re-runs the chapters.
fn labs_digest(book: &Path) -> Result<String> {
    let root = root_of(book);
    let root = if root.as_os_str().is_empty() { Path::new(".") } else { root };
    let mut h = Sha256::new();
    let checkpoints = tangle::labs::checkpoint_files(root)?;
    for path in tangle::labs::results_files(root)?.into_iter().chain(checkpoints) {
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        h.update(format!("{name}\n{}\n", bytes.len()).as_bytes());
        h.update(&bytes);
    }
    Ok(to_hex(&h.finalize()))
}

/// Digests of what a chapter's build and run depend on besides the book, for the cache key,
/// by part: the book's lockfile; libtorch (its version, and its library by size and time: it
/// is hundreds of MB) and the Qwen3 tokenizer files (by name, size and time); and the
/// toolchain (`rustc -vV`, cargo's config files and the variables that change how cargo
/// compiles: RUSTFLAGS, CARGO_PROFILE_*, ...). Computed once per run. The checker itself is
/// keyed by [`CHECKER_SOURCE_HASH`], not by where or when its executable was built.
fn inputs_digests(env: &[(String, String)], lockfile: Option<&Path>) -> Vec<(KeyPart, String)> {
    let stamp = |h: &mut Sha256, path: &Path| {
        if let Ok(meta) = std::fs::metadata(path) {
            let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            h.update(format!("{} {} {:?}\n", path.display(), meta.len(), modified).as_bytes());
        }
    };
    let lock = hex(&lockfile.and_then(|p| std::fs::read(p).ok()).unwrap_or_default());
    let mut h = Sha256::new();
    for (k, v) in env {
        let dir = Path::new(v);
        if k == qwen3::ENV_VAR {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
                .unwrap_or_default();
            files.sort();
            files.iter().for_each(|f| stamp(&mut h, f));
        } else if k == "LIBTORCH" {
            h.update(format!("libtorch {:?}\n", libtorch::version_of(dir)).as_bytes());
            stamp(&mut h, &dir.join("lib").join("libtorch_cpu.so"));
        }
    }
    let libraries = to_hex(&h.finalize());
    let mut h = Sha256::new();
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    match std::process::Command::new(rustc).arg("-vV").output() {
        Ok(out) => h.update(&out.stdout),
        Err(e) => h.update(format!("rustc -vV: {e}\n").as_bytes()),
    }
    // Cargo's config files can set rustflags, profiles or a linker for the chapter builds;
    // their contents count, not where the checkout is.
    let cwd = std::env::current_dir().unwrap_or_default();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
    for file in cargo_config_files(&cwd, cargo_home.as_deref()) {
        h.update(b"cargo config\n");
        h.update(std::fs::read(&file).unwrap_or_default());
    }
    let mut build_vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "RUSTC", "RUSTC_WRAPPER"].contains(&k.as_str())
                || k.starts_with("CARGO_PROFILE_")
        })
        .collect();
    build_vars.sort();
    for (k, v) in build_vars {
        h.update(format!("{k}={v}\n").as_bytes());
    }
    let toolchain = to_hex(&h.finalize());
    vec![(KeyPart::Lockfile, lock), (KeyPart::Libraries, libraries), (KeyPart::Toolchain, toolchain)]
}

/// The config files cargo reads for a build started in `cwd` (cargo looks from its working
/// directory, not from `--manifest-path`): `.cargo/config.toml` or the older `.cargo/config`
/// in `cwd` and each parent, then in `cargo_home`.
fn cargo_config_files(cwd: &Path, cargo_home: Option<&Path>) -> Vec<PathBuf> {
    let dirs = cwd.ancestors().map(|dir| dir.join(".cargo")).chain(cargo_home.map(Path::to_path_buf));
    dirs.filter_map(|dir| ["config.toml", "config"].into_iter().map(|name| dir.join(name)).find(|f| f.is_file()))
        .collect()
}

/// The command that refreshes `ids`, as the user should type it.
fn refresh_command(opts: &Options, ids: &str) -> String {
    let mut cmd = format!("cargo run -p checker -- --chapters {ids} --refresh");
    if opts.book != Path::new("book") {
        let _ = write!(cmd, " --book {}", opts.book.display());
    }
    cmd
}

/// How one chapter came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Passed,
    /// Ran to the end, but some block printed other than its recorded Output.
    OutputsDiffer,
    /// Did not compile, panicked, hung, crashed, or broke a book rule.
    Failed,
    /// Not built: a chapter it needs does not compile.
    Skipped,
}

/// A chapter's verdict and the text reported for it.
struct Report {
    verdict: Verdict,
    text: String,
    /// A refresh that recorded the chapter: the CPU time its program used.
    recorded_cpu: Option<Duration>,
}

impl Report {
    fn new(verdict: Verdict, text: String) -> Report {
        Report { verdict, text, recorded_cpu: None }
    }
}

/// What the whole run shares.
struct Ctx<'a> {
    opts: &'a Options,
    book: &'a Book,
    env: Vec<(String, String)>,
    /// [`labs_digest`]: chapters may print lab results, so they are part of every cache key.
    labs: String,
    /// [`inputs_digests`]: the lockfile, libtorch and the tokenizer files, the toolchain.
    inputs: Vec<(KeyPart, String)>,
    target_dir: PathBuf,
    lockfile: Option<PathBuf>,
    work: PathBuf,
    progress: Progress,
    /// `book/cpu-seconds.json`: what each chapter's limit is derived from.
    cpu_record: limits::CpuRecord,
    /// The book's saved items, parsed once for every chapter's prefix.
    saved: std::cell::RefCell<tangle::library::ParsedChapters>,
}

fn label(chapter: &Chapter) -> String {
    format!("chapter {} ({})", chapter.id, chapter.path.display())
}

/// Check (or refresh) the selected chapters, writing reports to `out` (progress goes to stderr).
pub fn check(opts: &Options, out: &mut dyn Write) -> Result<Summary> {
    // A malformed chapter ends the book there: the chapters before it can still be checked.
    let (book, malformed) = Book::load_partial(&opts.book).map_err(|e| SetupError(format!("{e}")))?;
    let selected = match (select::select(&book, &opts.chapters), &malformed) {
        (Ok(selected), _) => selected,
        (Err(e), None) => return Err(SetupError(e).into()),
        (Err(_), Some(m)) => {
            let before = match book.ids().as_slice() {
                [] => String::new(),
                [only] => format!("; chapter {only}, before it, can be checked on its own"),
                [first, .., last] => format!("; the chapters before it can be checked on their own: --chapters {first}-{last}"),
            };
            return Err(SetupError(format!("{m}{before}")).into());
        }
    };
    // `all` and open ranges (`05-`) reach the malformed chapter: it fails the run.
    let reaches_malformed =
        opts.chapters.split(',').any(|p| p.trim().eq_ignore_ascii_case("all") || p.trim().ends_with('-'));
    for path in &book.unlisted {
        writeln!(
            out,
            "warning: {} is not listed in {}, so it is not part of the book and is never checked",
            path.display(),
            book.dir.join("src/SUMMARY.md").display()
        )?;
    }
    let progress = Progress::new();
    let env = environment(&opts.book, &mut |msg: &str| progress.println(&format!("checker: {msg}")))
        .map_err(|e| SetupError(format!("{e:#}")))?;
    let labs = labs_digest(&opts.book).map_err(|e| SetupError(format!("lab results: {e:#}")))?;
    let lockfile = opts.lockfile.clone().or_else(|| {
        let default = opts.book.parent().unwrap_or(Path::new(".")).join("agentrl").join("Cargo.lock");
        default.exists().then_some(default)
    });
    let inputs = inputs_digests(&env, lockfile.as_deref());
    let ctx = Ctx {
        opts,
        book: &book,
        env,
        labs,
        inputs,
        target_dir: opts.cargo_target_dir.clone().unwrap_or_else(|| opts.work_dir.join("target")),
        lockfile,
        work: std::path::absolute(&opts.work_dir)?,
        progress: progress.clone(),
        cpu_record: limits::CpuRecord::load(&opts.book).map_err(|e| SetupError(format!("{e:#}")))?,
        saved: Default::default(),
    };
    // Two checkers on one work dir would write each other's chapter crates between a cache
    // key and its build: one at a time (the lock is released when this process ends).
    let waiting = format!("checker: waiting for another checker using {}", ctx.work.display());
    let work_lock = libtorch::lock_file(&ctx.work.join("checker.lock"), &waiting, &mut |m| progress.println(m))?;
    let reports = check_chapters(&ctx, &selected, out);
    drop(work_lock);
    progress.finish();
    let Outcome { mut summary, mut failed_ids, refreshable, broken, cpu_used } = reports?;
    // A refresh records the CPU time of each chapter it recorded, so its limit follows it.
    if opts.refresh {
        let mut record = ctx.cpu_record.clone();
        let moved: Vec<String> = cpu_used.iter().filter(|(id, cpu)| record.note(id, *cpu)).map(|(id, _)| id.clone()).collect();
        if !moved.is_empty() {
            record.save()?;
            writeln!(out, "recorded the CPU time of chapter(s) {} in {}", moved.join(", "), record.path.display())?;
        }
    }
    // prose that quotes an interval no output prints: after a refresh, the reading to rewrite
    for problem in prose::unprinted_intervals(&book, &selected) {
        writeln!(out, "error: {problem}")?;
        let id = (book.chapters.iter()).find(|c| c.path == problem.path).map(|c| c.id.clone());
        if let Some(id) = id.filter(|id| !failed_ids.contains(id)) {
            summary.passed = summary.passed.saturating_sub(1);
            summary.failed += 1;
            failed_ids.push(id);
        }
    }
    if let Some(m) = &malformed {
        let id = tangle::book::chapter_file_parts(&m.path.file_name().unwrap_or_default().to_string_lossy())
            .map(|(id, _)| id);
        if reaches_malformed {
            writeln!(out, "{}: FAILED\nerror: {m}\n(the chapters after it were not checked)\n", m.path.display())?;
            summary.failed += 1;
            failed_ids.push(id.unwrap_or_else(|| m.path.display().to_string()));
        } else {
            writeln!(out, "warning: {m} (not among the chapters checked)")?;
        }
    }
    if opts.refresh && broken.is_empty() {
        retangle(opts, out)?;
    } else {
        warn_if_stale(opts, &broken, out)?;
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
    let skipped = if summary.skipped > 0 { format!(" ({} of them skipped)", summary.skipped) } else { String::new() };
    writeln!(out, "{} passed, {} failed{skipped}", summary.passed, summary.failed)?;
    Ok(summary)
}

/// Build the selected chapters one after another, run up to `jobs` programs at once, and
/// print each chapter's report in book order as soon as it and those before it are done.
fn check_chapters(ctx: &Ctx, selected: &[usize], out: &mut dyn Write) -> Result<Outcome> {
    let mut summary = Summary::default();
    let mut failed_ids = Vec::new();
    let mut refreshable = Vec::new();
    let mut broken: BTreeMap<usize, String> = BTreeMap::new();
    let mut done: BTreeMap<usize, Report> = BTreeMap::new();
    let mut next_to_print = 0;
    let mut cpu_used = Vec::new();
    let mut print_ready = |done: &mut BTreeMap<usize, Report>, out: &mut dyn Write| -> Result<()> {
        while let Some(report) = done.remove(&next_to_print) {
            let chapter = &ctx.book.chapters[selected[next_to_print]];
            if let (Verdict::Passed, Some(cpu)) = (report.verdict, report.recorded_cpu) {
                cpu_used.push((chapter.id.clone(), cpu));
            }
            ctx.progress.suspend(|| -> Result<()> {
                out.write_all(report.text.as_bytes())?;
                out.flush()?;
                Ok(())
            })?;
            match report.verdict {
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
                Verdict::Skipped => {
                    summary.failed += 1;
                    summary.skipped += 1;
                    failed_ids.push(chapter.id.clone());
                }
            }
            next_to_print += 1;
        }
        Ok(())
    };

    let checked = std::thread::scope(|scope| -> Result<()> {
        // An error below (the report's reader gone: `checker | head`) must not wait for the
        // programs still running: stop them, so the workers (joined as the scope ends) return.
        let mut stop_on_error = StopOnError(true);
        let (job_tx, job_rx) = mpsc::channel::<(usize, PathBuf, String, Duration)>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (result_tx, result_rx) = mpsc::channel::<(usize, Result<RunResult>)>();
        for _ in 0..ctx.opts.jobs.max(1) {
            let (job_rx, result_tx) = (Arc::clone(&job_rx), result_tx.clone());
            let (env, progress) = (&ctx.env, ctx.progress.clone());
            scope.spawn(move || loop {
                let job = job_rx.lock().unwrap().recv();
                let Ok((pos, executable, what, limit)) = job else { break };
                let activity = progress.start(what);
                let result = run::run(&executable, env, limit);
                drop(activity);
                if result_tx.send((pos, result)).is_err() {
                    break;
                }
            });
        }
        drop(result_tx);

        let mut running: HashMap<usize, Built> = HashMap::new();
        let finish_one = |pos: usize, result: Result<RunResult>, running: &mut HashMap<usize, Built>| -> Result<Report> {
            let built = running.remove(&pos).expect("a result for a chapter that was started");
            let chapter = built.chapter;
            finish(ctx, built, result?).with_context(|| format!("checking chapter {}", chapter.id))
        };
        for (pos, &index) in selected.iter().enumerate() {
            let chapter = &ctx.book.chapters[index];
            let prepared = prepare(ctx, index, &mut broken).with_context(|| format!("checking chapter {}", chapter.id))?;
            let staged = match prepared {
                Ok(p) => {
                    // A build is CPU-bound too (and cargo gives it every core): start it only
                    // while fewer than `jobs` programs run, so a build and two programs never
                    // share two cores and a chapter's "run" figure is its own speed.
                    while running.len() >= ctx.opts.jobs.max(1) {
                        let (pos, result) = result_rx.recv().context("a chapter run worker stopped")?;
                        let report = finish_one(pos, result, &mut running)?;
                        done.insert(pos, report);
                        print_ready(&mut done, out)?;
                    }
                    build_step(ctx, p, &mut broken).with_context(|| format!("checking chapter {}", chapter.id))?
                }
                Err(report) => Err(report),
            };
            match staged {
                Err(report) => {
                    done.insert(pos, report);
                }
                Ok(built) => {
                    let what = format!("chapter {}: running", chapter.id);
                    let (executable, limit) = (built.executable.clone(), built.limit.cpu);
                    running.insert(pos, built);
                    job_tx.send((pos, executable, what, limit)).expect("run workers are alive");
                }
            }
            while let Ok((pos, result)) = result_rx.try_recv() {
                let report = finish_one(pos, result, &mut running)?;
                done.insert(pos, report);
            }
            print_ready(&mut done, out)?;
        }
        drop(job_tx);
        while !running.is_empty() {
            let (pos, result) = result_rx.recv().context("a chapter run worker stopped")?;
            let report = finish_one(pos, result, &mut running)?;
            done.insert(pos, report);
            print_ready(&mut done, out)?;
        }
        stop_on_error.0 = false;
        Ok(())
    });
    checked?;
    let broken = broken.keys().map(|&k| ctx.book.chapters[k].id.clone()).collect();
    Ok(Outcome { summary, failed_ids, refreshable, broken, cpu_used })
}

/// Stops every build and program the checker started when dropped armed (an early return).
struct StopOnError(bool);

impl Drop for StopOnError {
    fn drop(&mut self) {
        if self.0 {
            process::stop_everything(false);
        }
    }
}

/// What [`check_chapters`] found.
struct Outcome {
    summary: Summary,
    failed_ids: Vec<String>,
    /// Chapters whose outputs differ, which `--refresh` would fix.
    refreshable: Vec<String>,
    /// Chapters whose saved code does not compile (a tangle of them would not either).
    broken: Vec<String>,
    /// Chapters refreshed, with the CPU time their program used.
    cpu_used: Vec<(String, Duration)>,
}

/// A chapter whose program is generated and whose cache key is known.
struct Prepared<'a> {
    index: usize,
    chapter: &'a Chapter,
    krate: ChapterCrate,
    run_blocks: Vec<usize>,
    key: CacheKey,
    stamp: PathBuf,
    /// Why the chapter runs (a cache miss, in a few words), or None when forced to.
    why: Option<String>,
    limit: limits::Limit,
}

/// A chapter whose program is built and ready to run.
struct Built<'a> {
    chapter: &'a Chapter,
    krate: ChapterCrate,
    run_blocks: Vec<usize>,
    key: CacheKey,
    stamp: PathBuf,
    why: Option<String>,
    limit: limits::Limit,
    executable: PathBuf,
    build_time: Duration,
}

/// Step 1: the prefix library (chapters before this one only, so a later name fails to
/// compile), the program, the cache key. `Err(report)` when the chapter is done already:
/// skipped, broken, or cached.
fn prepare<'a>(
    ctx: &Ctx<'a>,
    index: usize,
    broken: &mut BTreeMap<usize, String>,
) -> Result<std::result::Result<Prepared<'a>, Report>> {
    let book = ctx.book;
    let chapter = &book.chapters[index];
    if let Some((&needed, why)) = broken.range(..index).next() {
        let text = format!("{}: skipped: needs chapter {}, {why}\n", label(chapter), book.chapters[needed].id);
        return Ok(Err(Report::new(Verdict::Skipped, text)));
    }
    let parsed = &mut *ctx.saved.borrow_mut();
    let saved = tangle::library::crate_files_with(book, index, false, parsed)
        .and_then(|prefix| tangle::library::collect_with(book, index + 1, parsed).map(|_| prefix));
    let prefix = match saved {
        Ok(prefix) => prefix,
        Err(e) => return Ok(Err(saved_code_error(book, index, &e, broken))),
    };
    let program = match program::generate(book, index) {
        Ok(p) => p,
        Err(e) => return Ok(Err(Report::new(Verdict::Failed, format!("{}: FAILED\nerror: {e}\n\n", label(chapter))))),
    };
    let package =
        format!("chapter-{}-{}", chapter.id.to_ascii_lowercase(), &hex(ctx.work.display().to_string().as_bytes())[..8]);
    let krate =
        ChapterCrate { dir: ctx.work.join(format!("ch-{}", chapter.id)), package, main_rs: program.main_rs, prefix };
    let limit = ctx.cpu_record.limit(&chapter.id, ctx.opts.time_limit);
    let key = cache_key(&krate, chapter, ctx, limit.cpu);
    let stamp = ctx.work.join("cache").join(format!("{}.pass", chapter.id));
    let recorded = std::fs::read_to_string(&stamp).ok();
    if !ctx.opts.force && !ctx.opts.refresh && recorded.as_deref() == Some(key.stamp().as_str()) {
        let timings = if ctx.opts.timings { "; --force re-runs it, for --timings" } else { "; --force re-runs" };
        return Ok(Err(Report::new(Verdict::Passed, format!("{}: ok (cached{timings})\n", label(chapter)))));
    }
    let why = (!ctx.opts.force && !ctx.opts.refresh).then(|| key.why_not(recorded.as_deref()));
    Ok(Ok(Prepared { index, chapter, krate, run_blocks: program.run_blocks, key, stamp, why, limit }))
}

/// A saved block that does not parse or breaks a rule: the chapter holding it is broken
/// for every chapter after it; report the error once, with the chapter it belongs to.
fn saved_code_error(book: &Book, index: usize, e: &BookError, broken: &mut BTreeMap<usize, String>) -> Report {
    let chapter = &book.chapters[index];
    let owner = book.chapters.iter().position(|c| c.path == e.path).unwrap_or(index);
    broken.entry(owner).or_insert_with(|| "whose saved code does not compile".to_string());
    let needs = if owner < index { format!(": needs chapter {}, whose saved code is broken", book.chapters[owner].id) } else { String::new() };
    Report::new(Verdict::Failed, format!("{}: FAILED{needs}\nerror: {e}\n\n", label(chapter)))
}

/// Step 2: write the chapter crate and build it (one build at a time: cargo serialises the
/// shared target dir anyway). A compile error in saved code (this chapter's or an earlier
/// one's) marks that chapter broken, so the chapters after it are skipped, not re-reported.
fn build_step<'a>(
    ctx: &Ctx<'a>,
    p: Prepared<'a>,
    broken: &mut BTreeMap<usize, String>,
) -> Result<std::result::Result<Built<'a>, Report>> {
    let chapter = p.chapter;
    p.krate.write(ctx.lockfile.as_deref())?;
    let started = Instant::now();
    let activity = ctx.progress.start(format!("chapter {}: building", chapter.id));
    let mut compiled = 0usize;
    let outcome = build::build(&p.krate, &ctx.target_dir, &ctx.env, &mut |name| {
        compiled += 1;
        activity.set_detail(format!("{compiled} crate(s) compiled, last {name}"));
    })?;
    drop(activity);
    let build_time = started.elapsed();
    let (report, locations) = match outcome {
        BuildOutcome::Built { executable } => {
            let Prepared { chapter, krate, run_blocks, key, stamp, why, limit, .. } = p;
            return Ok(Ok(Built { chapter, krate, run_blocks, key, stamp, why, limit, executable, build_time }));
        }
        BuildOutcome::Failed { report, locations } => (report, locations),
    };
    let in_saved_code = |k: usize| {
        let c = &ctx.book.chapters[k];
        locations.iter().any(|(path, line)| {
            c.saved_blocks()
                .any(|b| *path == b.path && (b.code_line..b.code_line + b.code.lines().count().max(1)).contains(line))
        })
    };
    let culprit = (0..=p.index).find(|&k| in_saved_code(k));
    let needs = match culprit {
        Some(k) => {
            broken.entry(k).or_insert_with(|| "which does not compile".to_string());
            if k < p.index {
                format!(": needs chapter {}, which does not compile", ctx.book.chapters[k].id)
            } else {
                String::new()
            }
        }
        None => String::new(),
    };
    let untouched = if ctx.opts.refresh { "; left untouched" } else { "" };
    Ok(Err(Report::new(
        Verdict::Failed,
        format!("{}: FAILED to compile{needs} (build {:.1} s){untouched}\n{report}", label(chapter), build_time.as_secs_f64()),
    )))
}

/// Step 4 (after the run): judge it, then refresh or report.
fn finish(ctx: &Ctx, built: Built, result: RunResult) -> Result<Report> {
    let chapter = built.chapter;
    let runs: Vec<&CodeBlock> = built.run_blocks.iter().map(|&i| &chapter.blocks[i]).collect();
    let limit_why = built.limit.explain(&ctx.cpu_record.path);
    let judgement = compare::judge(chapter, &runs, &result, &built.krate, &limit_why, !ctx.opts.refresh);
    let mut times = format!("build {:.1} s, run {:.1} s", built.build_time.as_secs_f64(), result.elapsed.as_secs_f64());
    if let Some(why) = &built.why {
        let _ = write!(times, "; ran because {why}");
    }
    let mut report = if !ctx.opts.refresh {
        report_step(&built, judgement, &times)?
    } else {
        let new_source = refresh::rewrite(chapter, &judgement.printed);
        let changes = new_source != chapter.source;
        match outputs_that_do_not_repeat(ctx, &built, &runs, &judgement, changes)? {
            Some(differences) => Report::new(
                Verdict::Failed,
                format!("{}: FAILED ({times}); nothing written\n{differences}\n", label(chapter)),
            ),
            None => refresh_step(ctx, &built, judgement, new_source, &times, result.cpu)?,
        }
    };
    if ctx.opts.timings {
        report.text.push_str(&block_timings(chapter, &runs, &result));
    }
    Ok(report)
}

/// Refresh records only outputs that repeat: before it rewrites a chapter, the program runs a
/// second time, and each block must print the same bytes again -> the blocks that did not.
/// `changes`: the refresh would rewrite the chapter.
fn outputs_that_do_not_repeat(
    ctx: &Ctx,
    built: &Built,
    runs: &[&CodeBlock],
    first: &compare::Judgement,
    changes: bool,
) -> Result<Option<String>> {
    let chapter = built.chapter;
    if !changes {
        return Ok(None); // nothing to record: this run already repeated the recorded outputs
    }
    let again = run::run(&built.executable, &ctx.env, built.limit.cpu)?;
    let limit_why = built.limit.explain(&ctx.cpu_record.path);
    let second = compare::judge(chapter, runs, &again, &built.krate, &limit_why, false);
    let mut messages = Vec::new();
    for (block, text) in &first.printed {
        let Some((_, repeat)) = second.printed.iter().find(|(b, _)| std::ptr::eq(*b, *block)) else { continue };
        if repeat != text {
            let header = ("first run".to_string(), "second run".to_string());
            messages.push(format!(
                "{}:{}: the block printed different output on two runs, so nothing is recorded; a chapter \
                 must print the same bytes on every run (seed what is random, order what is unordered, \
                 print no times or addresses):\n{}",
                chapter.path.display(),
                block.fence_line,
                compare::unified_diff(text, repeat, &header)
            ));
        }
    }
    if first.completed != second.completed && messages.is_empty() {
        let stopped = first.completed.min(second.completed);
        let line = runs.get(stopped).map_or(0, |b| b.fence_line);
        let which = if first.completed < second.completed { "first" } else { "second" };
        let failure = if first.completed < second.completed { &first.messages } else { &second.messages };
        messages.push(format!(
            "{}:{line}: the block completed on one run but not on the other (the {which} run stopped there), \
             so nothing is recorded; that run said:\n{}",
            chapter.path.display(),
            failure.join("\n")
        ));
    }
    Ok((!messages.is_empty()).then(|| messages.join("\n")))
}

/// `--timings`: each completed run block's wall time, in book order, at its Markdown line;
/// blocks under 0.05 s are summed into one line.
fn block_timings(chapter: &Chapter, runs: &[&CodeBlock], result: &RunResult) -> String {
    let total = result.elapsed.as_secs_f64().max(1e-9);
    let mut text = format!("  block times ({} of {} blocks completed; the first includes start-up):\n", result.block_ends.len(), runs.len());
    let (mut quick, mut quick_time, mut rows) = (0usize, 0.0, vec![]);
    let mut previous = Duration::ZERO;
    for (block, &end) in runs.iter().zip(&result.block_ends) {
        let secs = end.saturating_sub(previous).as_secs_f64();
        previous = end;
        if secs < 0.05 {
            (quick, quick_time) = (quick + 1, quick_time + secs);
        } else {
            rows.push((format!("{}:{}", chapter.path.display(), block.fence_line), secs));
        }
    }
    if quick > 0 {
        rows.push((format!("{quick} block(s) under 0.05 s"), quick_time));
    }
    let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
    for (label, secs) in rows {
        text.push_str(&format!("    {label:<width$}  {secs:7.2} s  {:3.0}%\n", 100.0 * secs / total));
    }
    text
}

/// Step 5a: the verdict of a check, and the cache stamp of a pass.
fn report_step(built: &Built, j: compare::Judgement, times: &str) -> Result<Report> {
    let chapter = built.chapter;
    if j.broken || j.outputs_differ {
        let verdict = if j.broken { Verdict::Failed } else { Verdict::OutputsDiffer };
        return Ok(Report::new(verdict, format!("{}: FAILED ({times})\n{}\n", label(chapter), j.messages.join("\n"))));
    }
    write_stamp(&built.stamp, &built.key)?;
    Ok(Report::new(Verdict::Passed, format!("{}: ok ({times})\n", label(chapter))))
}

/// Step 5b: rewrite the Output blocks of the blocks that completed (never of blocks that
/// did not run, nor an output over the limit), only if the file still holds what was read.
fn refresh_step(
    ctx: &Ctx,
    built: &Built,
    j: compare::Judgement,
    new_source: String,
    times: &str,
    cpu: Duration,
) -> Result<Report> {
    let chapter = built.chapter;
    let unrecordable = refresh::unrecordable(chapter, &j.printed, &new_source);
    if !unrecordable.is_empty() {
        let reports: Vec<String> = unrecordable
            .iter()
            .map(|bad| {
                let shown: Vec<String> = bad.printed.lines().take(3).map(|l| format!("{l:?}")).collect();
                format!(
                    "{}:{}: the block printed text an Output block cannot hold as printed ({}): print it \
                     escaped, e.g. with {{:?}}; it began\n  {}",
                    chapter.path.display(),
                    bad.block.fence_line,
                    bad.reason,
                    shown.join("\n  ")
                )
            })
            .collect();
        return Ok(Report::new(
            Verdict::Failed,
            format!("{}: FAILED ({times}); nothing written\n{}\n\n", label(chapter), reports.join("\n")),
        ));
    }
    let written = refresh::write_chapter(chapter, &new_source)?;
    if written == Written::ChangedMeanwhile {
        return Ok(Report::new(
            Verdict::Failed,
            format!(
                "{}: FAILED: {} changed while it was being checked; nothing was written: run again\n\n",
                label(chapter),
                chapter.path.display()
            ),
        ));
    }
    let note = if written == Written::Rewritten { "Output blocks rewritten" } else { "already up to date" };
    if j.broken || j.outputs_differ {
        let done = match written {
            Written::Rewritten => format!("the Output blocks of the {} block(s) that ran were rewritten", j.completed),
            _ => format!("the {} block(s) that ran printed what is recorded, so nothing was rewritten", j.completed),
        };
        return Ok(Report::new(
            Verdict::Failed,
            format!("{}: FAILED ({times}); {done}\n{}\n", label(chapter), j.messages.join("\n")),
        ));
    }
    // The refreshed chapter now matches this run: remember it, keyed as the next check will
    // key it (its program is generated again: new Output blocks move the later blocks' lines,
    // which the program's line comments carry).
    let mut refreshed = chapter.clone();
    refreshed.blocks = tangle::book::parse_blocks(&chapter.path, &new_source)?;
    // a part's blocks follow the chapter file's (refresh writes only the chapter's file)
    refreshed.blocks.extend(chapter.blocks.iter().filter(|b| b.path != chapter.path).cloned());
    refreshed.source = new_source;
    let index = ctx.book.index_of(&chapter.id).expect("a chapter of the book");
    let mut book = ctx.book.clone();
    book.chapters[index] = refreshed.clone();
    let krate = ChapterCrate { main_rs: program::generate(&book, index)?.main_rs, ..built.krate.clone() };
    // The stamp is keyed with the limit the next check derives (this run may move the record).
    let mut record = ctx.cpu_record.clone();
    record.note(&chapter.id, cpu);
    let next_limit = record.limit(&chapter.id, ctx.opts.time_limit);
    write_stamp(&built.stamp, &cache_key(&krate, &refreshed, ctx, next_limit.cpu))?;
    let mut report = Report::new(Verdict::Passed, format!("{}: refreshed, {note} ({times})\n", label(chapter)));
    report.recorded_cpu = Some(cpu);
    Ok(report)
}

/// The generated crate beside the book (`agentrl/` next to `book/`), if there is one.
fn crate_beside(opts: &Options) -> Option<PathBuf> {
    let dir = opts.book.parent().unwrap_or(Path::new(".")).join("agentrl");
    dir.join("Cargo.toml").exists().then_some(dir)
}

/// After a refresh, keep the book's generated crate and reference page in step.
fn retangle(opts: &Options, out: &mut dyn Write) -> Result<()> {
    let Some(crate_dir) = crate_beside(opts) else { return Ok(()) };
    let book = Book::load(&opts.book).map_err(|e| SetupError(format!("{e}")))?;
    let Ok(tangled) = tangle::tangle_book(&book) else {
        return Ok(()); // the chapter reports already name the broken saved block
    };
    let stale = tangle::stale(&book, &tangled, &crate_dir);
    if !stale.is_empty() {
        match tangle::write(&book, &tangled, &crate_dir) {
            Ok(removed) => {
                let written: Vec<String> =
                    stale.iter().filter(|p| !removed.contains(p)).map(|p| p.display().to_string()).collect();
                if !written.is_empty() {
                    writeln!(out, "re-tangled {}", written.join(", "))?;
                }
                for path in removed {
                    writeln!(out, "removed {} (no chapter saves it any more)", path.display())?;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Other => writeln!(out, "error: {e}")?,
            Err(e) => return Err(e).context("re-tangling the generated crate"),
        }
    }
    warn_stale_labs(opts, &tangled, out)
}

/// A check passes on the chapters, but CI also runs `tangle --check`: say when it would fail,
/// for the generated crate and for the lab results computed with earlier saved code. `broken`:
/// chapters whose saved code does not compile, which must be fixed before anything is tangled.
fn warn_if_stale(opts: &Options, broken: &[String], out: &mut dyn Write) -> Result<()> {
    let Some(crate_dir) = crate_beside(opts) else { return Ok(()) };
    let Ok(book) = Book::load(&opts.book) else { return Ok(()) };
    let Ok(tangled) = tangle::tangle_book(&book) else { return Ok(()) };
    let stale = tangle::stale(&book, &tangled, &crate_dir);
    if !stale.is_empty() {
        let names: Vec<String> = stale.iter().map(|p| p.display().to_string()).collect();
        let differ = if names.len() == 1 { "differs" } else { "differ" };
        let advice = match broken {
            [] => "run `cargo run -p tangle` and commit the result".to_string(),
            ids => format!(
                "fix the saved code of chapter {} first (it does not compile), then run `cargo run -p tangle`",
                ids.join(", ")
            ),
        };
        writeln!(
            out,
            "warning: the generated crate is stale ({} {differ} from the book's saved blocks); {advice}",
            names.join(", ")
        )?;
    }
    warn_stale_labs(opts, &tangled, out)
}

/// Lab results that the book's saved code (as a fresh tangle, whether or not `agentrl/` has
/// been rewritten) no longer matches: each named with the command that regenerates it.
fn warn_stale_labs(opts: &Options, tangled: &tangle::Tangled, out: &mut dyn Write) -> Result<()> {
    let modules: Vec<(String, String)> = tangled
        .crate_files
        .iter()
        .filter_map(|f| {
            let name = f.rel_path.strip_prefix("src").ok()?.to_str()?;
            (!name.contains('/')).then(|| (name.to_string(), f.content.clone()))
        })
        .collect();
    let root = root_of(&opts.book);
    let root = if root.as_os_str().is_empty() { Path::new(".") } else { root };
    let (problems, _) = tangle::labs::check_results_with(root, tangle::labs::Sources::Tangled(&modules));
    for problem in problems {
        if let tangle::labs::ProblemKind::Stale { command, .. } = &problem.kind {
            writeln!(
                out,
                "warning: {} was computed with other saved code than the book's now (an edit that can \
                 change what the lab computes; comments and layout do not count): rerun `{command}` \
                 and commit the result, or `tangle --check` (CI) fails",
                problem.file
            )?;
        }
    }
    Ok(())
}

/// Lower-case hex of the SHA-256 of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

fn to_hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The checker's identity in cache keys: a hash of its and tangle's sources and the workspace
/// lock, made by `build.rs` (the same sources judge the same way wherever they were built).
pub const CHECKER_SOURCE_HASH: &str = env!("CHECKER_SOURCE_HASH");

/// One thing a chapter's cache key covers; a stamp records each part's digest, so a miss can
/// say which changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyPart {
    Checker,
    Chapter,
    Prefix,
    Environment,
    TimeLimit,
    Labs,
    Lockfile,
    Libraries,
    Toolchain,
}

impl KeyPart {
    fn name(self) -> &'static str {
        match self {
            KeyPart::Checker => "checker",
            KeyPart::Chapter => "chapter",
            KeyPart::Prefix => "prefix",
            KeyPart::Environment => "environment",
            KeyPart::TimeLimit => "time-limit",
            KeyPart::Labs => "labs",
            KeyPart::Lockfile => "lockfile",
            KeyPart::Libraries => "libraries",
            KeyPart::Toolchain => "toolchain",
        }
    }

    /// Why a chapter re-ran when this part changed.
    fn changed(self) -> &'static str {
        match self {
            KeyPart::Checker => "the checker was rebuilt from other sources",
            KeyPart::Chapter => "the chapter's code or recorded outputs changed",
            KeyPart::Prefix => "the saved code of an earlier chapter changed",
            KeyPart::Environment => {
                "what the program sees changed (LIBTORCH, LD_LIBRARY_PATH or the tokenizer folder)"
            }
            KeyPart::TimeLimit => "the time limit changed",
            KeyPart::Labs => "a lab results file changed",
            KeyPart::Lockfile => "the lockfile of the chapter programs (agentrl/Cargo.lock) changed",
            KeyPart::Libraries => "libtorch or the Qwen3 tokenizer files changed",
            KeyPart::Toolchain => "the Rust toolchain or cargo's build settings changed",
        }
    }
}

/// Everything a chapter's result depends on, by part: its blocks ([`blocks_digest`]: code and
/// recorded outputs, not prose); its prefix (code only: the
/// prefix files carry no Markdown line numbers, so prose edits in earlier chapters do not
/// count); the environment the program sees; the time limit; the lab results it may read;
/// the lockfile, libraries and toolchain; and the checker itself. Nothing in it depends on
/// where the checkout or the work dir is, or on how the checker was started.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CacheKey(Vec<(KeyPart, String)>);

impl CacheKey {
    /// The stamp file's text: one `part digest` line per part.
    fn stamp(&self) -> String {
        self.0.iter().map(|(part, digest)| format!("{} {digest}\n", part.name())).collect()
    }

    /// Why a stamp does not match this key, in a few words.
    fn why_not(&self, stamp: Option<&str>) -> String {
        let Some(stamp) = stamp else { return "no earlier pass is recorded".to_string() };
        let recorded: HashMap<&str, &str> = stamp.lines().filter_map(|l| l.split_once(' ')).collect();
        let changed: Vec<&str> = self
            .0
            .iter()
            .filter(|(part, digest)| recorded.get(part.name()) != Some(&digest.as_str()))
            .map(|(part, _)| part.changed())
            .collect();
        match changed.as_slice() {
            [] => "the stamp is unreadable".to_string(),
            [one] => one.to_string(),
            [first, rest @ ..] if recorded.len() == self.0.len() => format!("{first}, and {} more input(s) changed too", rest.len()),
            _ => "its stamp is from an older checker".to_string(),
        }
    }
}

fn cache_key(krate: &ChapterCrate, chapter: &Chapter, ctx: &Ctx, limit: Duration) -> CacheKey {
    let env = &ctx.env;
    let mut program = Sha256::new();
    // The package names carry a hash of the work dir's path (to keep artifacts apart in a
    // shared target dir); that is not something the program can print.
    for text in [krate.cargo_toml(), krate.prefix_cargo_toml()] {
        let tag = krate.work_tag();
        program.update(if tag.is_empty() { text } else { text.replace(tag, "WORK") }.as_bytes());
    }
    // Not main.rs: it follows from the blocks and the checker, and it carries Markdown line
    // numbers, which a prose edit moves without changing what the program prints.
    let mut prefix = Sha256::new();
    for f in &krate.prefix {
        prefix.update(f.rel_path.display().to_string().as_bytes());
        prefix.update(f.content.as_bytes());
    }
    // LD_LIBRARY_PATH carries the user's own value after libtorch's lib/: the program sees it.
    let keyed = |k: &str| ["LIBTORCH", "LD_LIBRARY_PATH", qwen3::ENV_VAR].contains(&k);
    let mut environment = Sha256::new();
    for (k, v) in env.iter().filter(|(k, _)| keyed(k)) {
        environment.update(format!("{k}={v}\n").as_bytes());
    }
    let mut checker = Sha256::new();
    checker.update(concat!("checker ", env!("CARGO_PKG_VERSION"), "\n"));
    checker.update(CHECKER_SOURCE_HASH.as_bytes());
    // The program's text follows from the chapter and the checker; hashed with the chapter.
    let mut text = Sha256::new();
    text.update(blocks_digest(chapter).as_bytes());
    text.update(program.finalize());
    let mut parts = vec![
        (KeyPart::Checker, to_hex(&checker.finalize())),
        (KeyPart::Chapter, to_hex(&text.finalize())),
        (KeyPart::Prefix, to_hex(&prefix.finalize())),
        (KeyPart::Environment, to_hex(&environment.finalize())),
        (KeyPart::TimeLimit, limit.as_millis().to_string()),
        (KeyPart::Labs, ctx.labs.clone()),
    ];
    parts.extend(ctx.inputs.iter().cloned());
    CacheKey(parts)
}

/// A digest of what a chapter's check depends on in its text: each block's file, kind, fence
/// info, code and recorded output, in order; not the prose between them. So an edit of the
/// prose alone is a cache hit (the prose check of intervals runs on every check anyway). An
/// output that names a Markdown location (a panic's `file.md:LINE`) keys its block's lines too.
fn blocks_digest(chapter: &Chapter) -> String {
    let mut h = Sha256::new();
    for block in &chapter.blocks {
        let output = block.output.as_ref().map(|o| o.text.as_str());
        let field = |h: &mut Sha256, text: &str| {
            h.update(text.len().to_le_bytes());
            h.update(text.as_bytes());
        };
        field(&mut h, &block.path.display().to_string());
        field(&mut h, &format!("{:?}", block.kind));
        field(&mut h, &block.info);
        field(&mut h, &block.code);
        field(&mut h, output.unwrap_or("\u{0}no output"));
        if output.is_some_and(|text| text.contains(".md:")) {
            field(&mut h, &format!("{} {}", block.code_line, block.fence_line));
        }
    }
    to_hex(&h.finalize())
}

fn write_stamp(path: &Path, key: &CacheKey) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, key.stamp())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_the_book_cannot_be_checked_on_are_named() {
        assert_eq!(platform_check("linux", "x86_64", true), Ok(None));
        let err = platform_check("macos", "aarch64", false).unwrap_err();
        assert!(err.contains("this is macos aarch64"), "{err}");
        let warning = platform_check("linux", "x86_64", false).unwrap().unwrap();
        assert!(warning.contains("no AVX2"), "{warning}");
        let warning = platform_check("linux", "aarch64", false).unwrap().unwrap();
        assert!(warning.contains("this is aarch64"), "{warning}");
    }

    #[test]
    fn cargo_config_files_are_found_from_the_working_dir_up_and_in_cargo_home() {
        let root = tempfile::tempdir().unwrap();
        let (outer, inner, home) = (root.path().join("a"), root.path().join("a/b/c"), root.path().join("home"));
        for dir in [&inner, &home] {
            std::fs::create_dir_all(dir.join(".cargo")).unwrap();
        }
        std::fs::create_dir_all(outer.join(".cargo")).unwrap();
        std::fs::write(outer.join(".cargo/config.toml"), "[build]\nrustflags = []\n").unwrap();
        std::fs::write(inner.join(".cargo/config"), "").unwrap();
        std::fs::write(home.join(".cargo/config.toml"), "").unwrap();
        // A config file above the temp dir (/tmp/.cargo) is not this test's.
        let ours = |files: Vec<PathBuf>| -> Vec<PathBuf> { files.into_iter().filter(|f| f.starts_with(root.path())).collect() };
        let found = ours(cargo_config_files(&inner, Some(&home.join(".cargo"))));
        let expected = [inner.join(".cargo/config"), outer.join(".cargo/config.toml"), home.join(".cargo/config.toml")];
        assert_eq!(found, expected);
        assert_eq!(ours(cargo_config_files(&root.path().join("a/b"), None)), [outer.join(".cargo/config.toml")]);
    }
}
