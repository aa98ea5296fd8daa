//! The checker's identity for the chapter cache: a hash of the sources that decide how a
//! chapter is generated, built, run and judged (this crate's and tangle's, and the workspace
//! lock that pins their dependencies). It stands for "the checker's version" in the cache
//! key: the same sources judge the same way wherever the checker was built or started from,
//! which the path or the time of its executable could not say.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("checker/ is in the workspace").to_path_buf();
    let mut files = Vec::new();
    for dir in ["checker/src", "tangle/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.extend(["checker/Cargo.toml", "tangle/Cargo.toml", "Cargo.lock"].iter().map(|f| root.join(f)));
    files.sort();
    let mut h = Sha256::new();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let rel = file.strip_prefix(&root).unwrap_or(file);
        let bytes = std::fs::read(file).unwrap_or_default();
        h.update(format!("{}\n{}\n", rel.display(), bytes.len()).as_bytes());
        h.update(&bytes);
    }
    for dir in ["checker/src", "tangle/src"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display()); // a file added or removed
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=CHECKER_SOURCE_HASH={hex}");
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}
