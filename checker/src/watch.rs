//! `--watch`: check, then check again whenever a chapter (or a lab results file) changes.
//!
//! Every round is a whole [`crate::check`] of the selection, so the cache decides what runs:
//! a chapter whose text changed runs, and so do the chapters after it when its saved code
//! changed; the rest report `ok (cached)` at once. A round starts once the files have been
//! quiet for [`QUIET`], and only when their contents differ from what the last round left
//! (a refresh rewrites chapters itself, which must not start another round).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result};
use notify::{RecursiveMode, Watcher};

use crate::Options;

/// How long the watched files must be quiet before a round starts (an editor's save is
/// often several writes and a rename).
pub const QUIET: Duration = Duration::from_millis(300);

/// The folders a round depends on: the book's `src/` and, beside the book, `labs/results`.
fn watched_dirs(opts: &Options) -> Vec<PathBuf> {
    let root = opts.book.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    [opts.book.join("src"), root.join(tangle::labs::RESULTS_DIR)].into_iter().filter(|d| d.is_dir()).collect()
}

/// Contents of every file in `dirs` (not in subfolders), by path.
fn snapshot(dirs: &[PathBuf]) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for path in entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()) {
            if let Ok(bytes) = std::fs::read(&path) {
                files.insert(path, bytes);
            }
        }
    }
    files
}

/// The files whose contents differ between two snapshots (added, removed or changed).
fn changed(before: &BTreeMap<PathBuf, Vec<u8>>, now: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = now.iter().filter(|(p, b)| before.get(*p) != Some(b)).map(|(p, _)| p.clone()).collect();
    paths.extend(before.keys().filter(|p| !now.contains_key(*p)).cloned());
    paths
}

/// Check the selection, then again after every change, until the process is stopped
/// (Ctrl-C: the interrupt handler stops what is running and exits).
pub fn watch(opts: &Options, out: &mut dyn Write) -> Result<()> {
    let dirs = watched_dirs(opts);
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = tx.send(event);
    })
    .context("starting the file watcher")?;
    for dir in &dirs {
        watcher.watch(dir, RecursiveMode::NonRecursive).with_context(|| format!("watching {}", dir.display()))?;
    }
    loop {
        match crate::check(opts, out) {
            Ok(_) => {}
            // A malformed SUMMARY.md or a bad selector: say so and wait for the fix.
            Err(e) => writeln!(out, "error: {e:#}")?,
        }
        let settled = snapshot(&dirs);
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        writeln!(out, "checker: watching {} for changes (Ctrl-C to stop)", shown.join(" and "))?;
        out.flush()?;
        let edited = loop {
            rx.recv().context("the file watcher stopped")?.context("watching the book")?;
            while rx.recv_timeout(QUIET).is_ok() {} // wait for the writes to settle
            let edited = changed(&settled, &snapshot(&dirs));
            if !edited.is_empty() {
                break edited;
            }
        };
        let names: Vec<String> = edited.iter().map(|p| p.display().to_string()).collect();
        writeln!(out, "\nchecker: {} changed; checking again", names.join(", "))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_content_changes_count() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = vec![dir.path().to_path_buf()];
        std::fs::write(dir.path().join("01-a.md"), "one").unwrap();
        let before = snapshot(&dirs);
        std::fs::write(dir.path().join("01-a.md"), "one").unwrap(); // rewritten, same bytes
        assert!(changed(&before, &snapshot(&dirs)).is_empty());
        std::fs::write(dir.path().join("01-a.md"), "two").unwrap();
        std::fs::write(dir.path().join("02-b.md"), "new").unwrap();
        assert_eq!(changed(&before, &snapshot(&dirs)).len(), 2);
        std::fs::remove_file(dir.path().join("01-a.md")).unwrap();
        assert_eq!(changed(&before, &snapshot(&dirs)), [dir.path().join("02-b.md"), dir.path().join("01-a.md")]);
    }
}
