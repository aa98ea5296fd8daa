//! Find libtorch 2.13.0, or install it (the PyPI wheel) into a per-user cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

pub const TORCH_VERSION: &str = "2.13.0";

/// The installer, embedded so the checker works from any directory.
const INSTALL_SCRIPT: &str = include_str!("../../scripts/install-libtorch.sh");

/// A libtorch directory (holds `lib/` and `include/`), as torch-sys expects in `LIBTORCH`.
#[derive(Debug, Clone)]
pub struct Libtorch {
    pub dir: PathBuf,
}

impl Libtorch {
    /// Environment for builds and runs: `LIBTORCH` and `LD_LIBRARY_PATH`.
    pub fn env(&self) -> Vec<(String, String)> {
        let lib = self.dir.join("lib");
        let mut ld = lib.display().to_string();
        if let Ok(old) = std::env::var("LD_LIBRARY_PATH") {
            if !old.is_empty() && !old.split(':').any(|p| Path::new(p) == lib) {
                ld = format!("{ld}:{old}");
            }
        }
        vec![("LIBTORCH".into(), self.dir.display().to_string()), ("LD_LIBRARY_PATH".into(), ld)]
    }
}

fn has_libtorch(dir: &Path) -> bool {
    dir.join("lib").join("libtorch_cpu.so").exists() || dir.join("lib").join("libtorch_cpu.dylib").exists()
}

/// The per-user cache: `$AGENTRL_CACHE`, else `$XDG_CACHE_HOME/agentrl`, else `~/.cache/agentrl`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTRL_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join("agentrl");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("agentrl")
}

/// Where the installer puts the wheel's contents; libtorch is its `torch/` folder.
pub fn install_dir() -> PathBuf {
    cache_dir().join(format!("torch-{TORCH_VERSION}"))
}

/// `LIBTORCH` if set (it must be a libtorch), else the cache, installing there when missing.
pub fn locate_or_install(announce: &mut dyn FnMut(&str)) -> Result<Libtorch> {
    if let Some(dir) = std::env::var_os("LIBTORCH").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        if !has_libtorch(&dir) {
            bail!(
                "LIBTORCH={} is not a libtorch directory (no lib/libtorch_cpu.so); \
                 point it at a libtorch {TORCH_VERSION} (a folder with lib/ and include/), or unset it \
                 to let the checker install one into {}",
                dir.display(),
                install_dir().display()
            );
        }
        return Ok(Libtorch { dir });
    }
    let root = install_dir();
    let dir = root.join("torch");
    if has_libtorch(&dir) {
        return Ok(Libtorch { dir });
    }
    std::fs::create_dir_all(cache_dir())
        .with_context(|| format!("creating the libtorch cache {}", cache_dir().display()))?;
    // One installer at a time (tests and a book check may start together).
    let lock = std::fs::File::create(cache_dir().join(format!("torch-{TORCH_VERSION}.lock")))?;
    lock.lock().context("locking the libtorch cache")?;
    if has_libtorch(&dir) {
        return Ok(Libtorch { dir });
    }
    announce(&format!(
        "libtorch {TORCH_VERSION} not found (LIBTORCH is unset and {} is empty): installing the PyPI wheel \
         torch=={TORCH_VERSION} there with pip (about 4.5 GB with its CUDA libraries; a few minutes)",
        root.display()
    ));
    let output = Command::new("bash")
        .arg("-c")
        .arg(INSTALL_SCRIPT)
        .arg("install-libtorch.sh")
        .arg(&root)
        .arg(TORCH_VERSION)
        .output()
        .context("running bash for the libtorch installer")?;
    if !output.status.success() || !has_libtorch(&dir) {
        let log = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        let tail: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(6)..].join("\n    ");
        bail!(
            "libtorch {TORCH_VERSION} is missing and could not be installed into {} ({}).\n    {tail}\n\
             If no package registry is reachable, install libtorch {TORCH_VERSION} yourself and set \
             LIBTORCH=/path/to/libtorch (the folder holding lib/ and include/).",
            root.display(),
            match output.status.code() {
                Some(c) => format!("the installer exited with status {c}"),
                None => "the installer was killed".to_string(),
            }
        );
    }
    announce(&format!("libtorch {TORCH_VERSION} installed in {}", dir.display()));
    Ok(Libtorch { dir })
}
