//! `BugFixEnv::step` never panics, whatever text it is given (DESIGN.md, "The agentrl API").
//!
//! `agentrl` is generated from the book and built against libtorch, so it is not a workspace
//! member and cannot be a dev-dependency here. Instead this test builds a temporary book: the
//! real chapters listed in `book/src/SUMMARY.md` up to chapter 04, plus the fixture chapter
//! `fixtures/gym-fuzz/src/99-gym-fuzz.md`, which drives `arl::BugFixEnv::step` with random and
//! adversarial text. The checker builds that chapter against the library of the real chapters
//! before it, and `--refresh` records what it printed, which must include `panics: 0`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn bugfix_env_step_never_panics() {
    let repo = repo();
    // The book as the checker reads it: chapters in SUMMARY.md order, each with its code pages.
    let book = tangle::book::Book::load(&repo.join("book")).unwrap_or_else(|e| panic!("{e:?}"));
    let last = book.index_of("04").expect("SUMMARY.md lists chapter 04");

    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("book/src");
    std::fs::create_dir_all(&src).unwrap();
    let mut toc = String::from("# Summary\n\n");
    for chapter in &book.chapters[..=last] {
        std::fs::copy(&chapter.path, src.join(&chapter.file)).unwrap();
        toc.push_str(&format!("- [{}]({})\n", chapter.title, chapter.file));
        for part in &chapter.parts {
            std::fs::copy(&part.path, src.join(&part.file)).unwrap();
            toc.push_str(&format!("  - [{}]({})\n", part.title, part.file));
        }
    }
    let fuzz = "99-gym-fuzz.md";
    std::fs::copy(repo.join("checker/tests/fixtures/gym-fuzz/src").join(fuzz), src.join(fuzz)).unwrap();
    toc.push_str(&format!("- [99. Fuzzing the BugFix gym]({fuzz})\n"));
    std::fs::write(src.join("SUMMARY.md"), toc).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_checker"))
        .current_dir(tmp.path())
        .args(["--book", "book", "--work-dir", "work", "--chapters", "99", "--refresh", "--time-limit", "120"])
        // Share the book's build of tch and friends, pinned by the book's lock.
        .arg("--cargo-target-dir")
        .arg(repo.join("target/checker/target"))
        .arg("--lockfile")
        .arg(repo.join("agentrl/Cargo.lock"))
        .output()
        .unwrap();
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "the fuzz chapter failed:\n{log}");

    let text = std::fs::read_to_string(src.join(fuzz)).unwrap();
    let recorded = text.split("Output:").nth(1).unwrap_or_else(|| panic!("no Output block recorded:\n{text}\n{log}"));
    println!("{log}{recorded}");
    assert!(recorded.contains("\npanics: 0\n"), "BugFixEnv::step panicked:\n{recorded}");
    assert!(recorded.contains("steps: 20000,"), "the fuzz loop did not finish:\n{recorded}");
}
