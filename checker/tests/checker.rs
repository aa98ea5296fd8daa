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
        let mut cmd = self.command(args);
        let kept: Vec<_> = cmd.get_args().filter(|a| *a != "--force").map(|a| a.to_owned()).collect();
        let mut plain = Command::new(cmd.get_program());
        plain.current_dir(self.tmp.path()).args(kept);
        cmd = plain;
        self.output(cmd)
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

    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(f.read("01-mismatch.md"), before.replace("total reward: 3.5", "total reward: 3.0"));
    let (code, out) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    // A refresh of an up-to-date chapter is a byte-for-byte no-op.
    let after = std::fs::read(f.chapter("01-mismatch.md")).unwrap();
    let (code, out) = f.run(&["--refresh"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, &["already up to date"]);
    assert_eq!(std::fs::read(f.chapter("01-mismatch.md")).unwrap(), after);
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
    assert_contains(&out, &["book/src/01-hang.md:13: killed after the time limit of 3 s while this block was running"]);
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
    let f = Fixture::new("unterminated");
    let before = f.read("01-broken.md");
    for args in [&[][..], &["--refresh"][..]] {
        let (code, out) = f.run(args);
        assert_eq!(code, 2, "{out}");
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
    assert_contains(&out, &["book/src/01-print.md:8: saved block (opened at line 3) calls `println!` at item level"]);
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
    assert_eq!(code, 2, "{out}");
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
