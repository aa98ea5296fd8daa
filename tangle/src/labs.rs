//! Labs: experiments longer than a chapter (`labs/`, see DESIGN.md).
//!
//! A lab is a binary `labs/src/bin/NAME.rs` of the `agentrl-labs` crate; it writes
//! `labs/results/NAME.json` holding its results and their provenance: the command that
//! produced them and [`code_hash`], a hash of the code they were computed with. A results
//! file whose hash no longer matches the code is stale ([`check_results`], run by
//! `tangle --check`). This is the only implementation of the hash: the labs crate calls it
//! too, so the writer and the check cannot disagree.
//!
//! The code hash of lab NAME, in a repository rooted at ROOT, is the lower-case hex
//! SHA-256 of the concatenation, over these files in this order:
//!
//! 1. every regular file `ROOT/agentrl/src/*.rs` (not in subfolders), sorted by file name
//!    (byte order) — or, when the lab declares the last chapter it uses with a line
//!    `//! Uses chapters up to NN.` ([`declared_chapter`]), only the chapter modules
//!    `chMM_*.rs` with MM ≤ NN (a later chapter, or the crate root that lists the chapters,
//!    cannot change what the lab computes, so adding chapter 10 leaves a chapter-9 lab
//!    current, as the checker builds chapter 9 without it);
//! 2. `ROOT/labs/src/lib.rs`;
//! 3. `ROOT/labs/src/bin/NAME.rs`;
//!
//! of, for each file: its path relative to ROOT with `/` separators, `\n`, its length in
//! bytes in decimal, `\n`, then its bytes. (Paths and lengths make the concatenation
//! unambiguous: moving bytes from one file to the next changes the hash.)

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Where results files live, relative to the repository root.
pub const RESULTS_DIR: &str = "labs/results";

/// The lab binaries' folder, relative to the repository root.
pub const BIN_DIR: &str = "labs/src/bin";

/// The command that runs lab `lab` and writes its results file.
pub fn command(lab: &str) -> String {
    format!("scripts/lab.sh {lab}")
}

/// A lab name is a file stem of `[a-z0-9_-]`, starting with a letter or digit.
pub fn valid_name(lab: &str) -> bool {
    let mut chars = lab.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// The last chapter lab `source` says it uses: the NN of its line `//! Uses chapters up to NN.`
/// (None without one; then the lab's hash covers every agentrl module).
pub fn declared_chapter(source: &str) -> Option<u32> {
    source.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("//! Uses chapters up to ")?;
        let nn = rest.strip_suffix('.')?;
        (nn.len() == 2).then(|| nn.parse().ok()).flatten()
    })
}

/// The chapter number of an agentrl module file name `chNN_*.rs`.
fn module_chapter(file_name: &str) -> Option<u32> {
    let nn = file_name.strip_prefix("ch")?.get(..2)?;
    file_name.get(2..)?.starts_with(|c: char| c.is_ascii_digit()).then(|| nn.parse().ok()).flatten()
}

/// The files [`code_hash`] covers, relative to `root`, in hashing order.
pub fn hashed_files(root: &Path, lab: &str) -> std::io::Result<Vec<String>> {
    let lab_path = root.join(BIN_DIR).join(format!("{lab}.rs"));
    let last_chapter = match std::fs::read_to_string(&lab_path) {
        Ok(text) => declared_chapter(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(std::io::Error::new(e.kind(), format!("reading {}: {e}", lab_path.display()))),
    };
    let src = root.join("agentrl/src");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&src)
        .map_err(|e| std::io::Error::new(e.kind(), format!("reading {}: {e}", src.display())))?
    {
        let entry = entry?;
        let name = entry.file_name().into_string().map_err(|n| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{n:?} in {}: not UTF-8", src.display()))
        })?;
        let in_scope = match last_chapter {
            None => true,
            Some(last) => module_chapter(&name).is_some_and(|ch| ch <= last),
        };
        if name.ends_with(".rs") && entry.file_type()?.is_file() && in_scope {
            names.push(name);
        }
    }
    names.sort();
    let mut files: Vec<String> = names.into_iter().map(|n| format!("agentrl/src/{n}")).collect();
    files.push("labs/src/lib.rs".to_string());
    files.push(format!("{BIN_DIR}/{lab}.rs"));
    Ok(files)
}

/// The code hash of lab `lab` in the repository at `root` (the module docs define it).
pub fn code_hash(root: &Path, lab: &str) -> std::io::Result<String> {
    if !valid_name(lab) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{lab}` is not a lab name (lower-case letters, digits, `_`, `-`)"),
        ));
    }
    let mut h = Sha256::new();
    for rel in hashed_files(root, lab)? {
        let path = root.join(&rel);
        let bytes = std::fs::read(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))?;
        h.update(rel.as_bytes());
        h.update(format!("\n{}\n", bytes.len()).as_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The results files `ROOT/labs/results/*.json`, sorted by name (none if the folder is absent).
pub fn results_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let dir = root.join(RESULTS_DIR);
    let mut files = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for entry in entries {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "json") {
                    files.push(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    files.sort();
    Ok(files)
}

/// A results file that does not match the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabProblem {
    /// The results file, relative to the root (`labs/results/NAME.json`).
    pub file: String,
    pub kind: ProblemKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// Its recorded code hash differs from the code's: rerun `command`.
    Stale { recorded: String, now: String, command: String },
    /// `labs/src/bin/NAME.rs` does not exist.
    NoLab { bin: String },
    /// Not a results file (unreadable, not JSON, a field missing or wrong).
    Malformed(String),
}

impl fmt::Display for LabProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ProblemKind::Stale { recorded, now, command } => write!(
                f,
                "stale: {} was computed by other code (code_hash {}…, the code now hashes to {}…); \
                 regenerate it with `{command}` and commit it",
                self.file,
                &recorded[..recorded.len().min(12)],
                &now[..now.len().min(12)],
            ),
            ProblemKind::NoLab { bin } => write!(
                f,
                "error: {}: its lab {bin} does not exist; restore the lab or remove the results file",
                self.file
            ),
            ProblemKind::Malformed(why) => write!(f, "error: {}: {why}", self.file),
        }
    }
}

/// Check every results file under `root`: its lab exists and its code hash is the code's.
/// Returns the problems (empty when all match) and the number of files checked.
pub fn check_results(root: &Path) -> (Vec<LabProblem>, usize) {
    let files = match results_files(root) {
        Ok(f) => f,
        Err(e) => {
            let file = RESULTS_DIR.to_string();
            return (vec![LabProblem { file, kind: ProblemKind::Malformed(format!("cannot list: {e}")) }], 0);
        }
    };
    let problems = files.iter().filter_map(|path| check_one(root, path)).collect();
    (problems, files.len())
}

fn check_one(root: &Path, path: &Path) -> Option<LabProblem> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
    let file = format!("{RESULTS_DIR}/{stem}.json");
    let bad = |why: String| Some(LabProblem { file: file.clone(), kind: ProblemKind::Malformed(why) });
    if !valid_name(&stem) {
        return bad(format!("`{stem}` is not a lab name (lower-case letters, digits, `_`, `-`)"));
    }
    let bin = format!("{BIN_DIR}/{stem}.rs");
    if !root.join(&bin).is_file() {
        return Some(LabProblem { file, kind: ProblemKind::NoLab { bin } });
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return bad(format!("cannot read: {e}")),
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return bad(format!("not JSON: {e}")),
    };
    let field = |name: &str| json.get(name).and_then(|v| v.as_str()).map(str::to_string);
    match field("lab") {
        Some(lab) if lab == stem => {}
        Some(lab) => return bad(format!("its \"lab\" is `{lab}`, but the file is named for `{stem}`")),
        None => return bad("no \"lab\" string: not written by a lab".to_string()),
    }
    let Some(recorded) = field("code_hash") else {
        return bad("no \"code_hash\" string: not written by a lab".to_string());
    };
    let command = field("command").unwrap_or_else(|| command(&stem));
    let now = match code_hash(root, &stem) {
        Ok(h) => h,
        Err(e) => return bad(format!("cannot hash its code: {e}")),
    };
    (recorded != now).then(|| LabProblem { file, kind: ProblemKind::Stale { recorded, now, command } })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with a fake agentrl/src and a labs tree holding lab `demo`.
    fn repo() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path();
        for (path, text) in [
            ("agentrl/src/lib.rs", "pub mod ch01;\n"),
            ("agentrl/src/ch01.rs", "pub fn one() -> i64 { 1 }\n"),
            ("agentrl/src/notes.txt", "not code\n"),
            ("labs/src/lib.rs", "// the labs library\n"),
            ("labs/src/bin/demo.rs", "fn main() {}\n"),
        ] {
            std::fs::create_dir_all(r.join(path).parent().unwrap()).unwrap();
            std::fs::write(r.join(path), text).unwrap();
        }
        tmp
    }

    fn write_results(root: &Path, lab: &str, hash: &str) {
        std::fs::create_dir_all(root.join(RESULTS_DIR)).unwrap();
        let text = format!(
            "{{\n  \"lab\": \"{lab}\",\n  \"command\": \"scripts/lab.sh {lab}\",\n  \"code_hash\": \"{hash}\",\n  \"results\": {{}}\n}}\n"
        );
        std::fs::write(root.join(RESULTS_DIR).join(format!("{lab}.json")), text).unwrap();
    }

    #[test]
    fn the_hash_is_the_documented_one_over_the_documented_files() {
        let tmp = repo();
        let r = tmp.path();
        assert_eq!(
            hashed_files(r, "demo").unwrap(),
            ["agentrl/src/ch01.rs", "agentrl/src/lib.rs", "labs/src/lib.rs", "labs/src/bin/demo.rs"]
        );
        let mut expected = Vec::new();
        for rel in hashed_files(r, "demo").unwrap() {
            let bytes = std::fs::read(r.join(&rel)).unwrap();
            expected.extend_from_slice(format!("{rel}\n{}\n", bytes.len()).as_bytes());
            expected.extend_from_slice(&bytes);
        }
        let expected: String = Sha256::digest(&expected).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(code_hash(r, "demo").unwrap(), expected);
        // Files outside the definition do not count; files inside it do.
        std::fs::write(r.join("agentrl/src/notes.txt"), "changed\n").unwrap();
        std::fs::write(r.join("labs/src/bin/other.rs"), "fn main() {}\n").unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), expected);
        std::fs::write(r.join("agentrl/src/ch02.rs"), "").unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), expected, "a new agentrl module changes the hash");
        assert!(code_hash(r, "../demo").is_err());
    }

    #[test]
    fn a_lab_that_declares_its_chapters_hashes_only_those_modules() {
        let tmp = repo();
        let r = tmp.path();
        std::fs::write(r.join("agentrl/src/ch02_later.rs"), "pub fn two() -> i64 { 2 }\n").unwrap();
        std::fs::write(r.join("labs/src/bin/demo.rs"), "//! Uses chapters up to 01.\nfn main() {}\n")
            .unwrap();
        assert_eq!(
            hashed_files(r, "demo").unwrap(),
            ["agentrl/src/ch01.rs", "labs/src/lib.rs", "labs/src/bin/demo.rs"]
        );
        let before = code_hash(r, "demo").unwrap();
        std::fs::write(r.join("agentrl/src/ch02_later.rs"), "pub fn two() -> i64 { 3 }\n").unwrap();
        std::fs::write(r.join("agentrl/src/lib.rs"), "pub mod ch01;\npub mod ch02_later;\n").unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), before, "a later chapter does not count");
        std::fs::write(r.join("agentrl/src/ch01.rs"), "pub fn one() -> i64 { 11 }\n").unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), before, "a used chapter does");
        assert_eq!(declared_chapter("//! x\n//! Uses chapters up to 09.\n"), Some(9));
        assert_eq!(declared_chapter("//! Uses chapters up to 9.\n"), None);
        assert_eq!(module_chapter("ch10_kl.rs"), Some(10));
        assert_eq!(module_chapter("lib.rs"), None);
    }

    #[test]
    fn matching_results_pass_and_any_code_edit_makes_them_stale() {
        let tmp = repo();
        let r = tmp.path();
        assert_eq!(check_results(r), (vec![], 0), "no results folder: nothing to check");
        write_results(r, "demo", &code_hash(r, "demo").unwrap());
        assert_eq!(check_results(r), (vec![], 1));
        for edited in ["labs/src/bin/demo.rs", "labs/src/lib.rs", "agentrl/src/ch01.rs"] {
            let before = std::fs::read_to_string(r.join(edited)).unwrap();
            std::fs::write(r.join(edited), format!("{before}// edited\n")).unwrap();
            let (problems, n) = check_results(r);
            assert_eq!((problems.len(), n), (1, 1), "{edited}");
            let msg = problems[0].to_string();
            assert!(msg.starts_with("stale: labs/results/demo.json was computed by other code"), "{msg}");
            assert!(msg.contains("regenerate it with `scripts/lab.sh demo`"), "{msg}");
            std::fs::write(r.join(edited), before).unwrap();
            assert_eq!(check_results(r), (vec![], 1), "restoring {edited} makes it current again");
        }
    }

    #[test]
    fn results_of_a_removed_lab_or_not_from_a_lab_are_errors() {
        let tmp = repo();
        let r = tmp.path();
        write_results(r, "gone", "0000");
        std::fs::write(r.join(RESULTS_DIR).join("demo.json"), "{\"lab\": \"demo\"}").unwrap();
        let (problems, n) = check_results(r);
        assert_eq!(n, 2);
        let msgs: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "error: labs/results/demo.json: no \"code_hash\" string: not written by a lab",
                "error: labs/results/gone.json: its lab labs/src/bin/gone.rs does not exist; \
                 restore the lab or remove the results file",
            ]
        );
    }
}
