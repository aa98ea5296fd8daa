//! `tangle --check` as a user runs it, on a temporary repository: a book, the crate it
//! tangles to, and a labs tree with a results file.

use std::path::Path;
use std::process::Command;

fn tangle(root: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tangle"))
        .current_dir(root)
        .args(["--book", "book", "--out", "agentrl"])
        .args(args)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

fn write(root: &Path, rel: &str, text: &str) {
    std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
    std::fs::write(root.join(rel), text).unwrap();
}

#[test]
fn check_fails_on_stale_lab_results_naming_the_command_that_regenerates_them() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    write(r, "book/src/SUMMARY.md", "# Summary\n\n- [1](01-one.md)\n");
    write(r, "book/src/01-one.md", "# 1\n\n```rust\n//@save\n/// One.\npub fn one() -> i64 { 1 }\n```\n");
    let (code, out) = tangle(r, &[]);
    assert_eq!(code, 0, "{out}");
    write(r, "labs/src/lib.rs", "//! shared\n");
    write(r, "labs/src/bin/demo.rs", "fn main() { agentrl::one(); }\n"); // it reaches `one`
    let (code, hash) = tangle(r, &["--lab-hash", "demo"]);
    assert_eq!(code, 0, "{hash}");
    let hash = hash.trim();
    assert_eq!(hash.len(), 64, "{hash}");
    let results = format!(
        "{{\n  \"lab\": \"demo\",\n  \"command\": \"scripts/lab.sh demo 3\",\n  \"code_hash\": \"{hash}\",\n  \"results\": {{}}\n}}\n"
    );
    write(r, "labs/results/demo.json", &results);
    let (code, out) = tangle(r, &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("lab results are up to date with their code (1 file(s) in labs/results)"), "{out}");

    // A comment, a doc comment or layout cannot change what the lab computes: still current.
    write(r, "labs/src/bin/demo.rs", "//! The demo lab.\nfn main() {\n    /* tweaked */ agentrl::one();\n}\n");
    let (code, out) = tangle(r, &["--check"]);
    assert_eq!(code, 0, "{out}");
    write(r, "book/src/01-one.md", "# 1\n\nProse.\n\n```rust\n//@save\n/// One,  with a doubled space.\npub fn one() -> i64 { 1 }\n```\n");
    let (code, out) = tangle(r, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("stale"), "a doc edit in the book leaves the results current: {out}");

    // Touching the lab's code makes its results stale; the message names the file and the command.
    write(r, "labs/src/bin/demo.rs", "fn main() { let _tweaked = agentrl::one(); }\n");
    let (code, out) = tangle(r, &["--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("agentrl is up to date with the book"), "{out}");
    assert!(
        out.contains("stale: labs/results/demo.json was computed by other code")
            && out.contains("regenerate it with `scripts/lab.sh demo 3` and commit it"),
        "{out}"
    );
    // --skip-labs asks about the crate alone: current, so it passes.
    let (code, out) = tangle(r, &["--check", "--skip-labs"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("labs/results"), "{out}");
    write(r, "labs/src/bin/demo.rs", "fn main() { agentrl::one(); }\n");
    assert_eq!(tangle(r, &["--check"]).0, 0);

    // So does a change to the book's saved code, once tangled: tangle says so when it writes.
    write(r, "book/src/01-one.md", "# 1\n\n```rust\n//@save\n/// One.\npub fn one() -> i64 { 2 - 1 }\n```\n");
    let (code, out) = tangle(r, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("note: stale: labs/results/demo.json"), "{out}");
    let (code, out) = tangle(r, &["--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("stale: labs/results/demo.json"), "{out}");

    // A stale crate fails --skip-labs too.
    write(r, "book/src/01-one.md", "# 1\n\n```rust\n//@save\n/// One.\npub fn one() -> i64 { 3 - 2 }\n```\n");
    let (code, out) = tangle(r, &["--check", "--skip-labs"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("differs from a fresh tangle"), "{out}");
    assert_eq!(tangle(r, &[]).0, 0);

    // Results whose lab is gone are an error too.
    std::fs::remove_file(r.join("labs/src/bin/demo.rs")).unwrap();
    let (code, out) = tangle(r, &["--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error: labs/results/demo.json: its lab labs/src/bin/demo.rs does not exist"), "{out}");
}
