//! The checker run on small fixture books, as a user runs it: every failure mode gives
//! its message (file and line) and exit code, and refresh rewrites only Output blocks.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A fixture book copied into a temp dir (tests may rewrite it), plus a work dir.
struct Fixture {
    tmp: tempfile::TempDir,
    /// Stable per test (not temporary), so re-running the tests overwrites its program
    /// binaries in the shared target dir instead of adding new ones.
    work: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let src = repo().join("checker/tests/fixtures").join(name).join("src");
        let dst = tmp.path().join("book/src");
        std::fs::create_dir_all(&dst).unwrap();
        for entry in std::fs::read_dir(&src).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
        let test = std::thread::current().name().unwrap_or("main").replace("::", "-");
        let work = repo().join("target/checker-tests").join(test);
        Fixture { tmp, work }
    }

    fn chapter(&self, file: &str) -> PathBuf {
        self.tmp.path().join("book/src").join(file)
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.chapter(file)).unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_checker"));
        cmd.current_dir(self.tmp.path())
            .args(["--book", "book", "--force", "--work-dir"])
            .arg(&self.work)
            // Share the book's build of tch and friends, pinned by the book's lock.
            .arg("--cargo-target-dir")
            .arg(repo().join("target/checker/target"))
            .arg("--lockfile")
            .arg(repo().join("agentrl/Cargo.lock"))
            .args(args);
        cmd
    }

    /// (exit code, stdout + stderr) of a run that re-checks every chapter (`--force`).
    fn run(&self, args: &[&str]) -> (i32, String) {
        self.output(self.command(args))
    }

    /// The same, without `--force`: chapters that passed before may be skipped.
    fn run_cached(&self, args: &[&str]) -> (i32, String) {
        self.output(self.cached_command(args))
    }

    fn cached_command(&self, args: &[&str]) -> Command {
        let cmd = self.command(args);
        let kept: Vec<_> = cmd.get_args().filter(|a| *a != "--force").map(|a| a.to_owned()).collect();
        let mut plain = Command::new(cmd.get_program());
        plain.current_dir(self.tmp.path()).args(kept);
        plain
    }

    fn output(&self, mut cmd: Command) -> (i32, String) {
        let out = cmd.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code().unwrap_or(-1), text)
    }
}

fn assert_contains(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "expected {n:?} in:\n{text}");
    }
}

fn assert_lacks(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(!text.contains(n), "unexpected {n:?} in:\n{text}");
    }
}

#[test]
fn good_book_passes_shares_variables_uses_tch_and_caches() {
    let f = Fixture::new("good");
    let (code, out) = f.run(&["--chapters", "all"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-basics.md): ok (build", "chapter 02 (book/src/02-tensors.md): ok", "2 passed, 0 failed"]);
    let (code, out) = f.run_cached(&["--chapters", "02"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 02 (book/src/02-tensors.md): ok (cached", "1 passed, 0 failed"]);
    let (code, out) = f.run(&["--chapters", "02"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("cached"), "{out}");
    // A cargo config file where the checker runs can change the build: the cache sees it.
    std::fs::create_dir_all(f.tmp.path().join(".cargo")).unwrap();
    std::fs::write(f.tmp.path().join(".cargo/config.toml"), "[term]\nquiet = false\n").unwrap();
    let (code, out) = f.run_cached(&["--chapters", "02"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 02 (book/src/02-tensors.md): ok (build"]);
    let (code, out) = f.run_cached(&["--chapters", "02"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 02 (book/src/02-tensors.md): ok (cached"]);
    // So does a LD_LIBRARY_PATH of the user's, which the program sees after libtorch's lib/.
    let mut cmd = f.cached_command(&["--chapters", "02"]);
    cmd.env("LD_LIBRARY_PATH", f.tmp.path());
    let (code, out) = f.output(cmd);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 02 (book/src/02-tensors.md): ok (build"]);
}

#[test]
fn unknown_selector_lists_the_valid_chapters() {
    let f = Fixture::new("good");
    let (code, out) = f.run(&["--chapters", "07"]);
    assert_eq!(code, 2, "{out}");
    assert_contains(&out, &["unknown chapter `07`; valid chapters: 01, 02"]);
    let (code, out) = f.run(&["--chapters", "01,03-05"]);
    assert_eq!(code, 2, "{out}");
    assert_contains(&out, &["unknown chapter `03`"]);
}

#[test]
fn prose_quoting_an_interval_no_output_prints_fails_its_chapter() {
    let f = Fixture::new("good");
    let text = f.read("02-tensors.md");
    let edited = format!("{text}\nThe sum's interval, [13.5, 14.5], is where it lands.\n");
    std::fs::write(f.chapter("02-tensors.md"), &edited).unwrap();
    let (code, out) = f.run(&["--chapters", "all"]);
    assert_eq!(code, 1, "{out}");
    let line = edited.lines().count();
    assert_contains(
        &out,
        &[
            "chapter 02 (book/src/02-tensors.md): ok",
            &format!("error: book/src/02-tensors.md:{line}: the prose quotes the interval [13.5, 14.5]"),
            "failed: 02",
            "1 passed, 1 failed",
        ],
    );
    // once an output prints it, the same prose passes
    let printed = edited.replace("from chapter 1: 2\n```", "from chapter 1: 2\n```\n")
        .replace("println!(\"from chapter 1: {}\", arl::add(1, 1));",
            "println!(\"from chapter 1: {}\", arl::add(1, 1));\nprintln!(\"[13.5, 14.5]\");")
        .replace("from chapter 1: 2\n```\n", "from chapter 1: 2\n[13.5, 14.5]\n```");
    std::fs::write(f.chapter("02-tensors.md"), &printed).unwrap();
    let (code, out) = f.run(&["--chapters", "all"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn mismatch_shows_a_diff_at_the_output_line_and_refresh_fixes_only_that() {
    let f = Fixture::new("mismatch");
    let before = f.read("01-mismatch.md");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "book/src/01-mismatch.md:13: the block at line 5 printed something other than its recorded Output:",
            "--- recorded book/src/01-mismatch.md:13",
            "-total reward: 3.5",
            "+total reward: 3.0",
            " mean reward: 1.00",
            "record them with: cargo run -p checker -- --chapters 01 --refresh",
            "0 passed, 1 failed",
        ],
    );
    assert_eq!(f.read("01-mismatch.md"), before, "a check must not write");

    let record = f.tmp.path().join("book/cpu-seconds.json");
    assert!(!record.exists());
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(f.read("01-mismatch.md"), before.replace("total reward: 3.5", "total reward: 3.0"));
    // The refresh recorded the chapter's CPU time, which its limit is derived from from now on.
    assert_contains(&out, &["recorded the CPU time of chapter(s) 01 in book/cpu-seconds.json"]);
    let recorded = std::fs::read_to_string(&record).unwrap();
    assert!(recorded.starts_with("{\n  \"01\": ") && recorded.ends_with("\n}\n"), "{recorded}");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    // A refresh of an up-to-date chapter is a byte-for-byte no-op.
    let after = std::fs::read(f.chapter("01-mismatch.md")).unwrap();
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["already up to date"]);
    assert_eq!(std::fs::read(f.chapter("01-mismatch.md")).unwrap(), after);
    assert_eq!(std::fs::read_to_string(&record).unwrap(), recorded, "a run as fast leaves the record alone");
}

#[test]
fn block_that_prints_without_output_fails_and_refresh_adds_it() {
    let f = Fixture::new("no-output");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-silent.md:3: the block at line 3 prints, but has no Output block after it:", "+hello from a block"]);
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        f.read("01-silent.md"),
        "# 1. A block that prints with no Output block\n\n```rust\nprintln!(\"hello from a block\");\n```\n\nOutput:\n\n```text\nhello from a block\n```\n\nThe end.\n"
    );
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn refresh_removes_an_output_that_is_no_longer_printed_and_records_should_panic() {
    let f = Fixture::new("stale-output");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-stale.md:7: the block at line 3 no longer prints anything, but has an Output block:", "-this block used to print"]);
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 0, "{out}");
    let text = f.read("01-stale.md");
    assert!(!text.contains("used to print"), "{text}");
    assert_contains(&text, &["```rust\nlet x = 2;\n```\n\n```rust,should_panic", "panicked: index out of bounds"]);
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn panic_is_reported_at_its_block_and_earlier_blocks_are_still_compared() {
    let f = Fixture::new("panic");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "book/src/01-panic.md:7: the block at line 3 printed something other than its recorded Output:",
            "-before the crash",
            "+before the panic",
            "book/src/01-panic.md:13: the block panicked: index out of bounds: the len is 0 but the index is 0",
            "panic at book/src/01-panic.md:15:",
            "1 later block(s) did not run",
        ],
    );
}

#[test]
fn a_program_that_never_ends_is_killed_at_the_limit() {
    let f = Fixture::new("hang");
    let started = std::time::Instant::now();
    let (code, out) = f.run(&["--time-limit", "3"]);
    assert_eq!(code, 1, "{out}");
    // It sleeps: no CPU time, so the wall-clock backstop (3 x the limit) stops it.
    assert_contains(
        &out,
        &["book/src/01-hang.md:13: killed after 9 s of wall-clock time while this block was running, in which it \
           used only"],
    );
    assert!(started.elapsed().as_secs() < 120, "the hung program was not killed in time");
}

#[test]
fn non_utf8_output_is_an_error() {
    let f = Fixture::new("non-utf8");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-bytes.md:3: the block printed output that is not UTF-8 (first bad byte at offset 2"]);
    // Refresh cannot record it either, and leaves the file alone.
    let before = f.read("01-bytes.md");
    let (code, _) = f.run(&["--refresh"]);
    assert_eq!(code, 1);
    assert_eq!(f.read("01-bytes.md"), before);
}

#[test]
fn unterminated_fence_is_refused_and_nothing_is_written() {
    // A malformed chapter fails the run (exit 1, not 2: the chapters before it are checked).
    let f = Fixture::new("unterminated");
    let before = f.read("01-broken.md");
    for args in [&[][..], &["--refresh"][..]] {
        let (code, out) = f.run(args);
        assert_eq!(code, 1, "{out}");
        assert_contains(&out, &["book/src/01-broken.md:5: unterminated code fence: the ```rust fence opened here is never closed"]);
    }
    assert_eq!(f.read("01-broken.md"), before);
}

#[test]
fn saved_block_with_a_statement_names_its_line() {
    let f = Fixture::new("saved-statement");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-statement.md:8: saved block (opened at line 3) holds something that is not an item"]);
}

#[test]
fn saved_block_with_a_println_names_its_line() {
    let f = Fixture::new("saved-println");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-print.md:8:1: saved block (opened at line 3) calls `println!`; saved code prints nothing"]);
}

#[test]
fn a_name_saved_twice_names_both_places() {
    let f = Fixture::new("saved-twice");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &["book/src/02-second.md:7: `policy_evaluation` is saved twice: first at book/src/01-first.md:5, again here", "1 passed, 1 failed"],
    );
}

#[test]
fn a_later_chapters_name_is_a_compile_error_at_the_markdown_line() {
    let f = Fixture::new("later-name");
    let before = f.read("01-early.md");
    let (code, out) = f.run(&["--chapters", "01", "--refresh"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "FAILED to compile",
            "left untouched",
            "error[E0425]: cannot find function `late_helper` in crate `arl`",
            "--> book/src/01-early.md:6:14",
            "6 | let v = arl::late_helper(3);",
        ],
    );
    assert_eq!(f.read("01-early.md"), before);
    // The same name is fine in the chapter that saves it, and after it.
    let (code, out) = f.run(&["--chapters", "02"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn output_block_without_a_code_block_before_it() {
    let f = Fixture::new("orphan-output");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-orphan.md:5: Output block has no run block (```rust) directly before it"]);
}

#[test]
fn libtorch_missing_with_no_registry_reachable() {
    let f = Fixture::new("good");
    let cache = f.tmp.path().join("empty-cache");
    let out = f
        .command(&[])
        .env_remove("LIBTORCH")
        .env("AGENTRL_CACHE", &cache)
        // pip pointed at a closed port and no local wheels: as if no registry were reachable.
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("PIP_FIND_LINKS", f.tmp.path())
        .env("PIP_RETRIES", "0")
        .env("PIP_TIMEOUT", "2")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert_contains(
        &text,
        &[
            "libtorch 2.13.0 not found",
            "installing the PyPI wheel torch==2.13.0",
            "libtorch 2.13.0 is missing and could not be installed into",
            "set LIBTORCH=/path/to/libtorch",
        ],
    );

    let out = f.command(&[]).env("LIBTORCH", f.tmp.path().join("nowhere")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert_contains(&text, &["is not a libtorch directory (no lib/libtorch_cpu.so)"]);
}

// ---- issue 13: never pass wrongly, never lose work ----

#[test]
fn a_program_that_ends_early_fails_and_refresh_keeps_the_outputs_of_blocks_that_never_ran() {
    let f = Fixture::new("early-end");
    let before = f.read("01-early.md");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "book/src/01-early.md:13: the program ended (exit status 0) while this block was running, so the block did not complete",
            "1 later block(s) did not run",
            "0 passed, 1 failed",
        ],
    );
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(f.read("01-early.md"), before, "the Outputs of blocks that did not complete must stay");
}

#[test]
fn an_output_fence_without_its_close_is_refused_and_refresh_deletes_no_prose() {
    let f = Fixture::new("output-unclosed");
    let before = f.read("01-unclosed.md");
    for args in [&[][..], &["--refresh"][..]] {
        let (code, out) = f.run(args);
        assert_eq!(code, 1, "{out}");
        assert_contains(
            &out,
            &["book/src/01-unclosed.md:9: the ```text fence opened here is probably missing its closing fence: line 14 inside it opens another fence (```rust)"],
        );
    }
    assert_eq!(f.read("01-unclosed.md"), before, "the swallowed prose must survive a refresh");
}

#[test]
fn text_between_a_block_and_its_output_is_refused_not_refreshed_away() {
    let f = Fixture::new("output-gap");
    let before = f.read("01-gap.md");
    for args in [&[][..], &["--refresh"][..]] {
        let (code, out) = f.run(args);
        assert_eq!(code, 1, "{out}");
        assert_contains(
            &out,
            &["book/src/01-gap.md:9: `[mdp]: https://en.wikipedia.org/wiki/Markov_decision_process` stands between the run block at line 5 and its recorded Output (line 11)"],
        );
    }
    assert_eq!(f.read("01-gap.md"), before);
}

#[test]
fn a_process_left_running_is_killed_and_fails_the_chapter() {
    let f = Fixture::new("left-running");
    // The sleeps' arguments carry digits only this run knows (`sleep 60.4821…`), so the check
    // below asks about the processes this test started, never another program's `sleep 60`.
    let token = format!("{}{}", std::process::id(), std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos());
    let chapter = f.chapter("01-left.md");
    let text = f.read("01-left.md");
    assert!(text.contains("@TOKEN@"), "the fixture names its sleeps with @TOKEN@");
    std::fs::write(&chapter, text.replace("@TOKEN@", &token)).unwrap();
    let started = std::time::Instant::now();
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &["book/src/01-left.md:3: the program ended but left 3 process(es) it started still running (the \
           checker killed them, 2 of them outside its process group), and a process outside its process group, \
           with its environment replaced, holds its output open (the checker could not find it to stop it); \
           the first of them was started while this block ran (by its start time)"],
    );
    // The checker neither waited for the sleeps nor left behind those it could find.
    assert!(started.elapsed().as_secs() < 8, "the checker waited for a process it should have killed or given up on");
    for seconds in ["60", "9", "8"] {
        let sleeper = format!("^sleep {seconds}\\.{token}$");
        let ps = std::process::Command::new("pgrep").args(["-f", &sleeper]).output().expect("pgrep runs");
        assert!(ps.stdout.is_empty(), "{sleeper} still running: {}", String::from_utf8_lossy(&ps.stdout));
    }
    // (The checker waits for what it killed to be gone, so none may be found even under load.)
}

#[test]
fn a_control_character_is_named_on_refresh_and_only_its_block_is_refused() {
    let f = Fixture::new("control-char");
    let before = f.read("01-control.md");
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &["book/src/01-control.md:3: the block printed text an Output block cannot hold as printed \
           (U+0001 (a control character) on line 1 of its output): print it escaped"],
    );
    assert_lacks(&out, &["01-control.md:9:", "carriage return"]);
    assert_eq!(f.read("01-control.md"), before, "nothing is written");
}

#[test]
fn a_caught_panic_passes_and_an_exit_after_the_last_block_names_that_block() {
    let f = Fixture::new("at-exit");
    let (code, out) = f.run(&["--chapters", "all"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "chapter 01 (book/src/01-caught.md): ok",
            "book/src/02-drop.md:20: the program exit status: 3 after the last block had completed",
            "book/src/03-late.md:3: the program printed after its last block had completed (4 bytes",
            "1 passed, 2 failed",
        ],
    );
    assert_lacks(&out, &[":0:"]);
}

#[test]
fn refresh_records_only_outputs_that_repeat_on_a_second_run() {
    let f = Fixture::new("nondeterministic");
    let before = f.read("01-nondet.md");
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "nothing written",
            "book/src/01-nondet.md:13: the block printed different output on two runs, so nothing is recorded",
            "--- first run",
            "+++ second run",
        ],
    );
    assert_lacks(&out, &["01-nondet.md:3:"]);
    assert_eq!(f.read("01-nondet.md"), before);
}

#[test]
fn a_chapter_sees_only_the_environment_its_cache_key_covers() {
    let f = Fixture::new("environment");
    let mut cmd = f.command(&[]);
    cmd.env("AGENTRL_PROBE_VAR", "1").env("OMP_NUM_THREADS", "7");
    let (code, out) = f.output(cmd);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn two_checkers_on_one_work_dir_take_turns() {
    let f = Fixture::new("hang");
    // The first holds the work dir for at least the 3 s its hung program runs.
    let mut first = f.command(&["--time-limit", "3"]);
    let first = std::thread::spawn(move || first.output());
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (code, out) = f.run(&["--time-limit", "3"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["checker: waiting for another checker using", "killed after 9 s of wall-clock time"]);
    let first = first.join().unwrap().unwrap();
    assert_eq!(first.status.code(), Some(1));
}

#[test]
fn refresh_never_overwrites_a_chapter_saved_while_it_was_checked() {
    let f = Fixture::new("refresh-race");
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-edit.md changed while it was being checked; nothing was written: run again"]);
    let text = f.read("01-edit.md");
    assert_contains(&text, &["A paragraph the author just wrote.", "old output"]);
}

#[test]
fn refresh_re_tangles_the_generated_crate_atomically() {
    let f = Fixture::new("good");
    let book = tangle::Book::load(&f.tmp.path().join("book")).unwrap();
    let crate_dir = f.tmp.path().join("agentrl");
    tangle::write(&book, &tangle::tangle_book(&book).unwrap(), &crate_dir).unwrap();
    // Make one generated file stale and keep a second name (a hard link) for it: an
    // atomic replacement (temp file + rename) leaves the old inode, and so the link, alone.
    let module = crate_dir.join("src/ch01_basics.rs");
    std::fs::write(&module, "// stale\n").unwrap();
    let link = f.tmp.path().join("link.rs");
    std::fs::hard_link(&module, &link).unwrap();
    let (code, out) = f.run(&["--chapters", "01", "--refresh"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["re-tangled"]);
    assert!(std::fs::read_to_string(&module).unwrap().contains("pub fn add"));
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "// stale\n", "written in place, not replaced atomically");
}

#[test]
fn output_over_the_limit_stops_the_program_at_once_is_not_recorded_and_diffs_are_capped() {
    let f = Fixture::new("too-much-output");
    let before = f.read("01-flood.md");
    let started = std::time::Instant::now();
    let (code, out) = f.run(&["--time-limit", "100"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "book/src/01-flood.md:15: the block printed more than a block may (64 KiB or 400 lines; \
             MAX_BLOCK_OUTPUT_BYTES, MAX_BLOCK_OUTPUT_LINES in checker/src/process.rs), so the checker stopped \
             the program when it had printed",
            "more diff line(s) not shown (the diff is capped at 60 lines)",
        ],
    );
    assert_lacks(&out, &["time limit"]);
    // It never printed forever: stopped within a second or two, not at the 100 s limit.
    assert!(started.elapsed().as_secs() < 60, "the flood was not stopped at the output limit");
    let bytes: usize = out.split("had printed ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!(bytes < 1 << 20, "read {bytes} bytes of a flood: memory is not bounded");
    assert!(out.len() < 20_000, "the report should stay readable: {} bytes", out.len());
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 1, "{out}");
    assert!(!f.read("01-flood.md").contains("number 199"), "an output over the limit was recorded");
    assert!(f.read("01-flood.md").len() < before.len() + 10_000);
}

#[test]
fn a_print_anywhere_in_saved_code_is_an_error_at_its_line() {
    let f = Fixture::new("saved-print-in-fn");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-print.md:8:5: saved block (opened at line 3) calls `println!`; saved code prints nothing"]);
}

#[test]
fn a_mistyped_save_marker_is_an_error_naming_the_marker() {
    let f = Fixture::new("mistyped-marker");
    let original = f.read("01-marker.md");
    for spelling in ["// @save", "//@sav", "//@Save", "#@save", "// @Save"] {
        std::fs::write(f.chapter("01-marker.md"), original.replace("// @save", spelling)).unwrap();
        let (code, out) = f.run(&[]);
        assert_eq!(code, 1, "{spelling}: {out}");
        assert_contains(
            &out,
            &[&format!("book/src/01-marker.md:4: `{spelling}` looks like a mistyped saved-block marker; write exactly `//@save`")],
        );
    }
}

#[test]
fn a_missing_closing_fence_is_reported_where_the_block_opened() {
    let f = Fixture::new("swallowed-fence");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &["book/src/01-fence.md:3: the ```rust block opened here is probably missing its closing fence: line 9 inside it starts an Output block (Output:)"],
    );
    assert!(!out.contains("error["), "no rustc errors about the swallowed prose: {out}");
}

// ---- every error at its Markdown line ----

#[test]
fn a_syntax_error_in_a_saved_block_is_syns_own_at_its_line_and_column() {
    let f = Fixture::new("saved-syntax");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-syntax.md:9:14: syntax error in the saved block opened at line 3: `(` is never closed"]);
    assert!(!out.contains("not an item"), "{out}");
}

#[test]
fn run_block_errors_point_at_the_book_never_at_generated_code() {
    let f = Fixture::new("run-errors");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "book/src/01-syntax.md:4:",
            "syntax error in the run block opened at line 3",
            "`[` at book/src/01-syntax.md:4:13 is never closed",
            "book/src/02-nopanic.md:13: the block is marked should_panic but finished without panicking",
            "--> book/src/03-crate.md:4:",
            "chapters may use only std and the crates on the allow-list (CHAPTER_DEPS in tangle/src/library.rs)",
            "0 passed, 3 failed",
        ],
    );
    assert_lacks(&out, &["src/main.rs", "cargo add", "panicked: this block"]);
}

#[test]
fn a_chapters_code_page_is_compiled_with_it_and_its_errors_name_the_page() {
    let f = Fixture::new("part");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["2 passed, 0 failed"]);
    // A type error on the page: reported at the page's line, and chapter 1 is the culprit.
    let page = f.read("ch01-code.md").replace("    x * 2", "    \"twice\"");
    std::fs::write(f.chapter("ch01-code.md"), page).unwrap();
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "error[E0308]",
            "--> book/src/ch01-code.md:9:",
            "chapter 02 (book/src/02-two.md): skipped: needs chapter 01, which does not compile",
        ],
    );
}

#[test]
fn a_chapter_whose_saved_code_does_not_compile_is_reported_once() {
    let f = Fixture::new("broken-saved");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.matches("error[E0308]").count(), 1, "{out}");
    assert_contains(
        &out,
        &[
            "--> book/src/01-broken.md:7:",
            "chapter 02 (book/src/02-after.md): skipped: needs chapter 01, which does not compile",
            "chapter 03 (book/src/03-further.md): skipped: needs chapter 01, which does not compile",
            "0 passed, 3 failed (2 of them skipped)",
        ],
    );
    // Not selected, the broken chapter is still named once, by the first chapter that needs it.
    let (code, out) = f.run(&["--chapters", "02-03"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.matches("error[E0308]").count(), 1, "{out}");
    assert_contains(
        &out,
        &["chapter 02 (book/src/02-after.md): FAILED to compile: needs chapter 01, which does not compile", "chapter 03 (book/src/03-further.md): skipped"],
    );
}

#[test]
fn a_pub_saved_item_needs_a_doc_comment() {
    let f = Fixture::new("undocumented-pub");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["book/src/01-docs.md:9: `pub` item `undocumented` in the saved block opened at line 3 has no `///` doc comment"]);
    assert!(!out.contains("private_helper"), "{out}");
}

// ---- the book as a whole ----

#[test]
fn prose_edits_neither_stale_the_crate_nor_rerun_later_chapters() {
    let f = Fixture::new("good");
    let book_dir = f.tmp.path().join("book");
    let crate_dir = f.tmp.path().join("agentrl");
    let book = tangle::Book::load(&book_dir).unwrap();
    tangle::write(&book, &tangle::tangle_book(&book).unwrap(), &crate_dir).unwrap();
    // Written with absolute paths here; the checker, run from the book's parent, re-tangles
    // with the relative ones it names files by.
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 0, "{out}");
    let text = f.read("01-basics.md").replace("Run blocks share variables.", "A new paragraph.\n\nRun blocks share variables.");
    std::fs::write(f.chapter("01-basics.md"), text).unwrap();
    let (code, out) = f.run_cached(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("stale"), "prose made the crate stale: {out}");
    let (code, out) = f.run_cached(&["--chapters", "02"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 02 (book/src/02-tensors.md): ok (cached"]);
    assert!(!out.contains("stale"), "{out}");
    // A real change to saved code makes the crate stale, and the checker says how to fix it.
    let text = f.read("01-basics.md").replace("a + b", "b + a");
    std::fs::write(f.chapter("01-basics.md"), text).unwrap();
    let (code, out) = f.run(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["warning: the generated crate is stale", "run `cargo run -p tangle`"]);
}

#[test]
fn unlisted_chapter_files_are_reported_and_rust_in_other_pages_is_an_error() {
    let f = Fixture::new("good");
    std::fs::write(f.chapter("03-extra.md"), "# 3. Extra\n\n```rust\nprintln!(\"x\");\n```\n").unwrap();
    let (code, out) = f.run(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["warning: book/src/03-extra.md is not listed in book/src/SUMMARY.md"]);
    let (code, out) = f.run(&["--chapters", "03"]);
    assert_eq!(code, 2, "{out}");
    assert_contains(&out, &["chapter `03`: book/src/03-extra.md exists but book/src/SUMMARY.md does not list it"]);

    let summary = std::fs::read_to_string(f.chapter("SUMMARY.md")).unwrap();
    std::fs::write(f.chapter("SUMMARY.md"), format!("{summary}- [Notes](notes.md)\n")).unwrap();
    std::fs::write(f.chapter("notes.md"), "# Notes\n\n```rust,ignore\nshown();\n```\n\n```rust\nlet x = 1;\n```\n").unwrap();
    let (code, out) = f.run(&["--chapters", "01"]);
    assert_eq!(code, 2, "{out}");
    assert_contains(&out, &["book/src/notes.md:7: a ```rust block in a page that is not a chapter is never compiled or run"]);
}

#[test]
fn runs_from_a_subdirectory_with_positional_chapters() {
    let f = Fixture::new("good");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_checker"));
    cmd.current_dir(f.tmp.path().join("book/src"))
        .args(["--force", "--work-dir"])
        .arg(&f.work)
        .arg("--cargo-target-dir")
        .arg(repo().join("target/checker/target"))
        .arg("--lockfile")
        .arg(repo().join("agentrl/Cargo.lock"))
        .arg("01");
    let (code, out) = f.output(cmd);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-basics.md): ok", "1 passed, 0 failed"]);
    assert!(!out.contains("chapter 02"), "{out}");

    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_checker")).current_dir(elsewhere.path()).arg("01").output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert_contains(&text, &["run the checker from the repository root"]);
}

// ---- faster, and visibly alive ----

#[test]
fn jobs_run_programs_side_by_side_and_report_in_book_order() {
    let f = Fixture::new("good");
    let (code, out) = f.run(&["--jobs", "2"]);
    assert_eq!(code, 0, "{out}");
    let first = out.find("chapter 01 (book/src/01-basics.md): ok").expect(&out);
    let second = out.find("chapter 02 (book/src/02-tensors.md): ok").expect(&out);
    assert!(first < second, "{out}");
    assert_contains(&out, &["2 passed, 0 failed"]);
}

#[test]
fn a_long_run_shows_a_live_line() {
    let f = Fixture::new("hang");
    let (code, out) = f.run(&["--time-limit", "4"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["checker: chapter 01: running (2 s"]);
}

#[test]
fn differences_in_invisible_characters_are_shown_escaped() {
    let f = Fixture::new("invisible");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["(the lines differ only in invisible characters; shown escaped)", "+\"total: 3  \"", "+\"done\\r\""]);
}

// ---- the real Qwen3 tokenizer (issue 8) ----

#[test]
fn chapters_get_the_qwen3_tokenizer_files_and_crates() {
    let f = Fixture::new("qwen3");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-qwen3.md): ok"]);
    let out = Command::new(env!("CARGO_BIN_EXE_checker")).current_dir(repo()).arg("--print-env").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_contains(&text, &["export LIBTORCH=", "export AGENTRL_QWEN3_DIR=", "export AGENTRL_LABS_DIR="]);
}

// ---- MKL's AVX2 path on every vendor's CPU ----

/// A chapter program runs MKL's AVX2 branch (`MKL_CBWR=AVX2`), on AMD's CPUs as on Intel's:
/// without the preloaded library (`checker/src/mkl.rs`) an AMD CPU reports branch 2 (AUTO).
#[test]
fn chapter_programs_run_mkls_avx2_branch() {
    let f = Fixture::new("mkl");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-mkl.md): ok"]);
}

// ---- labs: chapters read committed lab results ----

#[test]
fn chapters_read_lab_results_and_a_changed_results_file_reruns_them() {
    let f = Fixture::new("labs");
    let results = f.tmp.path().join("labs/results");
    std::fs::create_dir_all(&results).unwrap();
    let write = |rate: &str| {
        let text = format!("{{\n  \"lab\": \"demo\",\n  \"results\": {{\n    \"pass_rate\": {rate}\n  }}\n}}\n");
        std::fs::write(results.join("demo.json"), text).unwrap();
    };
    write("0.5");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-labs.md): ok (build"]);
    let (code, out) = f.run_cached(&[]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-labs.md): ok (cached"]);
    // A regenerated results file is a new input: the chapter runs again, and prints the new value.
    write("0.75");
    let (code, out) = f.run_cached(&[]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("cached"), "{out}");
    assert_contains(&out, &["-lab demo: pass rate 0.5", "+lab demo: pass rate 0.75"]);
    // A new results file counts too, even one the chapter does not read.
    write("0.5");
    let (code, out) = f.run_cached(&[]);
    assert_eq!(code, 0, "{out}");
    std::fs::write(results.join("other.json"), "{}\n").unwrap();
    let (code, out) = f.run_cached(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("cached"), "{out}");

    let out = Command::new(env!("CARGO_BIN_EXE_checker"))
        .current_dir(f.tmp.path())
        .args(["--book", "book", "--print-env"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let cwd = std::fs::canonicalize(f.tmp.path()).unwrap();
    assert_contains(&text, &[&format!("export AGENTRL_LABS_DIR='{}'", cwd.join("labs/results").display())]);
}

#[test]
fn a_no_run_block_is_compiled_but_never_run() {
    let f = Fixture::new("no-run");
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "chapter 01 (book/src/01-no-run.md): ok",
            // a type error in a no_run block is still an error, at its Markdown line
            "--> book/src/02-no-run-error.md:4:",
            "1 passed, 1 failed",
        ],
    );
    assert_lacks(&out, &["never printed", "must never run", "src/main.rs"]);
}

#[test]
fn timings_list_slow_run_blocks_at_their_lines() {
    let f = Fixture::new("timings");
    let (code, out) = f.run(&["--timings"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["block times (3 of 3 blocks completed", "1 block(s) under 0.05 s"]);
    let line = out.lines().find(|l| l.trim_start().starts_with("book/src/01-slow.md:7 ")).expect(&out);
    let secs: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((0.3..5.0).contains(&secs), "{line}");
    // without the flag, no timings
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("block times"), "{out}");
}

// ---- issue 31: interrupting the checker, the cache key, lab staleness ----

/// Whether process `pid` is gone (or a zombie nobody waits for, which uses nothing).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().and_then(|r| r.split_whitespace().next()).is_some_and(|s| s == "Z"),
    }
}

#[test]
fn a_signal_to_the_checker_ends_the_chapter_program_and_all_it_started() {
    let f = Fixture::new("interrupt");
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let tmpdir = tempfile::tempdir().unwrap();
        let mut cmd = f.command(&["--time-limit", "300"]);
        cmd.env("TMPDIR", tmpdir.path()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let mut checker = cmd.spawn().unwrap();
        let pids_file = tmpdir.path().join("pids");
        let waited = std::time::Instant::now();
        while !pids_file.exists() {
            assert!(waited.elapsed().as_secs() < 240, "the chapter program never started");
            assert!(checker.try_wait().unwrap().is_none(), "the checker ended before the program started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let pids: Vec<i32> =
            std::fs::read_to_string(&pids_file).unwrap().split_whitespace().map(|p| p.parse().unwrap()).collect();
        std::thread::sleep(std::time::Duration::from_millis(300)); // well into the spin
        unsafe { libc::kill(checker.id() as i32, signal) };
        let out = checker.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(code), "{text}");
        assert_contains(&text, &["stopped 1 running build(s) and chapter program(s)"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !pids.iter().all(|&p| gone(p)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        for pid in &pids {
            assert!(gone(*pid), "process {pid} outlived the checker (signal {signal})");
        }
    }
}

#[test]
fn the_cache_survives_a_copied_checkout_and_cargos_library_path_and_says_why_it_misses() {
    let f = Fixture::new("good");
    // The work dir inside the checkout, as target/checker is in a real one.
    let in_checkout = |root: &Path, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_checker"));
        cmd.current_dir(root)
            .args(["--book", "book", "--work-dir", "target/checker", "--cargo-target-dir"])
            .arg(repo().join("target/checker/target"))
            .arg("--lockfile")
            .arg(repo().join("agentrl/Cargo.lock"))
            .args(args);
        cmd
    };
    let (code, out) = f.output(in_checkout(f.tmp.path(), &[]));
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["ok (build", "ran because no earlier pass is recorded"]);
    // `cargo run` puts target/debug, its deps/ and the toolchain's lib/ on LD_LIBRARY_PATH:
    // none of them is the user's, so none changes the key.
    let exe_dir = Path::new(env!("CARGO_BIN_EXE_checker")).parent().unwrap().to_path_buf();
    let cargo_dirs = format!("{}:{}", exe_dir.join("deps").display(), exe_dir.display());
    let mut cmd = in_checkout(f.tmp.path(), &[]);
    cmd.env("LD_LIBRARY_PATH", &cargo_dirs);
    let (code, out) = f.output(cmd);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-basics.md): ok (cached", "chapter 02 (book/src/02-tensors.md): ok (cached"]);
    let mut cmd = in_checkout(f.tmp.path(), &["--print-env"]);
    cmd.env("LD_LIBRARY_PATH", &cargo_dirs);
    let (code, out) = f.output(cmd);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains(&exe_dir.display().to_string()), "--print-env exports cargo's own paths:\n{out}");

    // A copy of the checkout (work dir included) elsewhere is still cached.
    let copy = tempfile::tempdir().unwrap();
    let status = Command::new("cp").arg("-a").arg(f.tmp.path().join(".")).arg(copy.path()).status().unwrap();
    assert!(status.success());
    let (code, out) = f.output(in_checkout(copy.path(), &[]));
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-basics.md): ok (cached", "chapter 02 (book/src/02-tensors.md): ok (cached"]);

    // Prose moves the blocks' lines but not what they print: still cached.
    let chapter = copy.path().join("book/src/02-tensors.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    let text = text.replacen("# 2. Tensors\n", "# 2. Tensors\n\nNew prose,\nthree lines.\n", 1);
    std::fs::write(&chapter, &text).unwrap();
    let (code, out) = f.output(in_checkout(copy.path(), &[]));
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 02 (book/src/02-tensors.md): ok (cached"]);

    // A miss says why, in one line.
    let edited = text.replacen("let t = tch::", "let t = /* edited */ tch::", 1);
    assert_ne!(edited, text);
    std::fs::write(&chapter, edited).unwrap();
    let (code, out) = f.output(in_checkout(copy.path(), &["--timings"]));
    assert_eq!(code, 0, "{out}");
    assert_contains(
        &out,
        &[
            "chapter 01 (book/src/01-basics.md): ok (cached; --force re-runs it, for --timings)",
            "chapter 02 (book/src/02-tensors.md): ok (build",
            "; ran because the chapter's code or recorded outputs changed)",
        ],
    );
    let mut cmd = in_checkout(copy.path(), &[]);
    cmd.env("LD_LIBRARY_PATH", copy.path());
    let (code, out) = f.output(cmd);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["ran because what the program sees changed (LIBTORCH, LD_LIBRARY_PATH"]);
}

#[test]
fn an_edit_that_makes_a_lab_stale_is_named_and_a_doc_edit_is_not() {
    let f = Fixture::new("good");
    let root = f.tmp.path();
    let tangle_into = |root: &Path| {
        let book = tangle::Book::load(&root.join("book")).unwrap();
        let tangled = tangle::tangle_book(&book).unwrap();
        tangle::write(&book, &tangled, &root.join("agentrl")).unwrap();
    };
    tangle_into(root);
    std::fs::create_dir_all(root.join("labs/src/bin")).unwrap();
    std::fs::write(root.join("labs/src/lib.rs"), "").unwrap();
    // the lab calls `add`: only what a lab reaches counts in its hash
    let lab = "//! Uses chapters up to 01.\nfn main() {\n    agentrl::add(1, 2);\n}\n";
    std::fs::write(root.join("labs/src/bin/demo.rs"), lab).unwrap();
    let hash = tangle::labs::code_hash(root, "demo").unwrap();
    std::fs::create_dir_all(root.join("labs/results")).unwrap();
    let results = format!(
        "{{\"lab\": \"demo\", \"command\": \"scripts/lab.sh demo\", \"code_hash\": \"{hash}\", \"results\": {{}}}}\n"
    );
    std::fs::write(root.join("labs/results/demo.json"), results).unwrap();
    let (code, out) = f.run(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert_lacks(&out, &["stale", "demo.json"]);
    // A doc comment reworded (the issue's doubled space): the crate is stale, the lab is not.
    let chapter = f.chapter("01-basics.md");
    let text = f.read("01-basics.md");
    std::fs::write(&chapter, text.replace("/// Add two numbers.", "/// Add  two numbers.")).unwrap();
    let (code, out) = f.run(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["warning: the generated crate is stale (", "differs from the book's saved blocks)"]);
    assert_lacks(&out, &["demo.json"]);
    // A change to the code: the checker names the lab and its command before agentrl/ is rewritten.
    std::fs::write(&chapter, text.replace("    a + b\n", "    b + a\n")).unwrap();
    let (code, out) = f.run(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(
        &out,
        &["warning: labs/results/demo.json was computed with other saved code than the book's now", "rerun `scripts/lab.sh demo`"],
    );
}

#[test]
fn a_malformed_chapter_does_not_stop_the_chapters_before_it() {
    let f = Fixture::new("good");
    let text = f.read("02-tensors.md");
    std::fs::write(f.chapter("02-tensors.md"), format!("{text}\n```rust\nprintln!(\"never closed\");\n")).unwrap();
    let (code, out) = f.run(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(
        &out,
        &["chapter 01 (book/src/01-basics.md): ok", "warning: book/src/02-tensors.md:", "(not among the chapters checked)"],
    );
    let (code, out) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-basics.md): ok", "book/src/02-tensors.md: FAILED", "failed: 02", "1 passed, 1 failed"]);
    let (code, out) = f.run(&["--chapters", "02"]);
    assert_eq!(code, 2, "{out}");
    assert_contains(&out, &["unterminated code fence", "chapter 01, before it, can be checked on its own"]);
}

#[test]
fn chapters_given_both_ways_are_joined() {
    let f = Fixture::new("good");
    let (code, out) = f.run(&["--chapters", "01", "02"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-basics.md): ok", "chapter 02 (book/src/02-tensors.md): ok", "2 passed"]);
}

#[test]
fn a_reader_that_leaves_early_ends_the_run_quietly() {
    let f = Fixture::new("good");
    let mut cmd = f.command(&[]);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take()); // `| head` that has read all it wants
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert_lacks(&err, &["Broken pipe", "error:"]);
}

#[test]
fn watch_rechecks_a_chapter_when_it_is_saved_and_ctrl_c_ends_it() {
    use std::io::Read;
    let f = Fixture::new("good");
    let mut cmd = f.cached_command(&["--watch", "01"]);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let shared = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut stdout = child.stdout.take().unwrap();
    let sink = std::sync::Arc::clone(&shared);
    let reader = std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    let wait_for = |needle: &str, times: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
        while shared.lock().unwrap().matches(needle).count() < times {
            assert!(std::time::Instant::now() < deadline, "no {needle:?} (x{times}) in:\n{}", shared.lock().unwrap());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    wait_for("checker: watching", 1);
    assert_contains(&shared.lock().unwrap(), &["1 passed, 0 failed"]);
    // Saved with a wrong recorded output: checked again, and it fails with the diff.
    let text = f.read("01-basics.md");
    std::fs::write(f.chapter("01-basics.md"), text.replace("x = 5", "x = 6")).unwrap();
    wait_for("checker: watching", 2);
    assert_contains(&shared.lock().unwrap(), &["01-basics.md changed; checking again", "-x = 6", "+x = 5", "0 passed, 1 failed"]);
    // Two saves in quick succession make one round; fixed, it passes again.
    std::fs::write(f.chapter("01-basics.md"), text.replace("x = 5", "x = 7")).unwrap();
    std::fs::write(f.chapter("01-basics.md"), &text).unwrap();
    wait_for("checker: watching", 3);
    assert_eq!(shared.lock().unwrap().matches("1 passed, 0 failed").count(), 2);
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert_eq!(status.code(), Some(130));
}

#[test]
fn a_chapter_just_refreshed_is_cached_even_when_its_new_outputs_move_later_blocks() {
    let f = Fixture::new("good");
    let text = f.read("01-basics.md");
    // Drop the first block's Output: the refresh writes it back, moving every later block down.
    let without = text.replacen("\nOutput:\n\n```text\nx = 5\n```\n", "\n", 1);
    assert_ne!(without, text);
    std::fs::write(f.chapter("01-basics.md"), &without).unwrap();
    let (code, out) = f.run(&["--chapters", "01", "--refresh"]);
    assert_eq!(code, 0, "{out}");
    assert!(f.read("01-basics.md").contains("```\n\nOutput:\n\n```text\nx = 5\n```\n"));
    let (code, out) = f.run_cached(&["--chapters", "01"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["chapter 01 (book/src/01-basics.md): ok (cached"]);
}

#[test]
fn a_program_that_spins_is_stopped_by_its_cpu_time() {
    let f = Fixture::new("interrupt");
    let tmpdir = tempfile::tempdir().unwrap();
    let mut cmd = f.command(&["--time-limit", "2"]);
    cmd.env("TMPDIR", tmpdir.path());
    let started = std::time::Instant::now();
    let (code, out) = f.output(cmd);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        &[
            "book/src/01-interrupt.md:6: killed after using the time limit of 2 s of CPU time while this block was running",
            "the limit is set with --time-limit SECS",
        ],
    );
    // Well before the 6 s wall-clock backstop, however loaded the machine (CPU time, not wall).
    assert!(started.elapsed().as_secs() < 60, "{out}");
}
