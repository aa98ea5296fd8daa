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

/// `LD_LIBRARY_PATH` without the folders `cargo run` and `cargo test` add for their own
/// use: those under the folder of the checker's executable (`target/debug`, its `deps/` and
/// build scripts' `out/`) and, when cargo started the checker (`cargo` is the `CARGO` it
/// sets), those in cargo's toolchain. A chapter program needs none of them, and keeping them
/// would make its cache key, and `--print-env`'s exports, depend on how the checker was started.
pub fn without_cargo_dirs(value: &str, exe_dir: Option<&Path>, cargo: Option<&Path>) -> String {
    // cargo is TOOLCHAIN/bin/cargo; rustup's proxy (~/.cargo/bin/cargo) has no toolchain there.
    let toolchain = cargo.and_then(|c| c.parent()?.parent()).filter(|t| t.join("lib/rustlib").is_dir());
    let ours = |entry: &str| {
        let entry = Path::new(entry);
        exe_dir.is_some_and(|d| entry.starts_with(d)) || toolchain.is_some_and(|t| entry.starts_with(t))
    };
    value.split(':').filter(|e| !e.is_empty() && !ours(e)).collect::<Vec<_>>().join(":")
}

fn has_libtorch(dir: &Path) -> bool {
    dir.join("lib").join("libtorch_cpu.so").exists() || dir.join("lib").join("libtorch_cpu.dylib").exists()
}

/// The version a libtorch folder says it is: `build-version` (a libtorch download) or
/// `version.py` (the `torch/` folder of a Python install), without its `+cpu`-style suffix;
/// None when it carries neither (a custom build).
pub fn version_of(dir: &Path) -> Option<String> {
    let base = |v: &str| v.trim().split('+').next().unwrap_or("").to_string();
    if let Ok(text) = std::fs::read_to_string(dir.join("build-version")) {
        return Some(base(&text));
    }
    let text = std::fs::read_to_string(dir.join("version.py")).ok()?;
    let line = text.lines().find(|l| l.trim_start().starts_with("__version__"))?;
    let quoted = line.split(['\'', '"']).nth(1)?;
    Some(base(quoted))
}

/// The per-user cache: `$AGENTRL_CACHE`, else `$XDG_CACHE_HOME/agentrl`, else `~/.cache/agentrl`.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("AGENTRL_CACHE").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir).join("agentrl"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".cache").join("agentrl")),
        None => bail!(
            "HOME is not set, so there is no per-user cache for libtorch and the tokenizer files: \
             set HOME, or AGENTRL_CACHE=/path/to/a/cache/folder"
        ),
    }
}

/// Where the installer puts the wheel's contents; libtorch is its `torch/` folder.
pub fn install_dir() -> Result<PathBuf> {
    Ok(cache_dir()?.join(format!("torch-{TORCH_VERSION}")))
}

/// Take the cache lock `name` (one installer at a time: tests and a book check may start
/// together), saying so when another process holds it.
pub fn lock_cache(name: &str, announce: &mut dyn FnMut(&str)) -> Result<std::fs::File> {
    let cache = cache_dir()?;
    let path = cache.join(name);
    let waiting = format!("waiting for another process installing into {} (it holds {})", cache.display(), path.display());
    lock_file(&path, &waiting, announce)
}

/// An exclusive lock on `path` (created, with its folder, if missing), held until the file is
/// dropped; `waiting` is announced first when another process holds it.
pub fn lock_file(path: &Path, waiting: &str, announce: &mut dyn FnMut(&str)) -> Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let lock = std::fs::File::create(path).with_context(|| format!("creating the lock file {}", path.display()))?;
    if lock.try_lock().is_err() {
        announce(waiting);
        lock.lock().with_context(|| format!("locking {}", path.display()))?;
    }
    Ok(lock)
}

/// Run an installer script with bash, its output (stdout and stderr) passed line by line to
/// `announce` and kept; the lock is handed down to it, so that if this process dies the lock
/// stays held until the installer (and the pip it runs) is gone too -> (exit status, output).
pub fn run_installer(
    script: &str,
    args: &[&std::ffi::OsStr],
    lock: &std::fs::File,
    announce: &mut dyn FnMut(&str),
) -> Result<(std::process::ExitStatus, String)> {
    use std::io::BufRead;
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(format!("exec 2>&1\n{script}")).arg("installer").args(args);
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        use std::os::unix::process::CommandExt;
        let fd = lock.as_raw_fd();
        // SAFETY: fcntl is async-signal-safe; it only clears close-on-exec on our lock's fd.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().context("running bash for an installer")?;
    let mut log = String::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap_or_default();
        // pip redraws progress with carriage returns: show the last state of the line
        let shown = line.rsplit('\r').next().unwrap_or("").trim_end();
        if !shown.is_empty() {
            announce(&format!("  {}", shown.chars().take(150).collect::<String>()));
        }
        log.push_str(shown);
        log.push('\n');
    }
    Ok((child.wait()?, log))
}

/// The last lines of an installer's output, for an error message.
pub fn log_tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(6)..].join("\n    ")
}

/// `LIBTORCH` if set (it must be a libtorch 2.13.0), else the cache, installing there when
/// missing or of another version.
pub fn locate_or_install(announce: &mut dyn FnMut(&str)) -> Result<Libtorch> {
    if let Some(dir) = std::env::var_os("LIBTORCH").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        let install_here = || install_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| "the cache".into());
        if !has_libtorch(&dir) {
            bail!(
                "LIBTORCH={} is not a libtorch directory (no lib/libtorch_cpu.so); \
                 point it at a libtorch {TORCH_VERSION} (a folder with lib/ and include/), or unset it \
                 to let the checker install one into {}",
                dir.display(),
                install_here()
            );
        }
        match version_of(&dir) {
            Some(v) if v != TORCH_VERSION => bail!(
                "LIBTORCH={} is libtorch {v}, but the book's outputs are recorded with {TORCH_VERSION} (other \
                 versions may print other digits); point it at a libtorch {TORCH_VERSION}, or unset it to let \
                 the checker install one into {}",
                dir.display(),
                install_here()
            ),
            _ => return Ok(Libtorch { dir }),
        }
    }
    let root = install_dir()?;
    let dir = root.join("torch");
    let installed = |dir: &Path| has_libtorch(dir) && version_of(dir).is_none_or(|v| v == TORCH_VERSION);
    if installed(&dir) {
        return Ok(Libtorch { dir });
    }
    let lock = lock_cache(&format!("torch-{TORCH_VERSION}.lock"), announce)?;
    if installed(&dir) {
        return Ok(Libtorch { dir });
    }
    let found = match (has_libtorch(&dir), version_of(&dir)) {
        (true, Some(v)) => format!("{} holds libtorch {v}", dir.display()),
        (false, _) if root.exists() => format!("{} holds no complete libtorch", root.display()),
        _ => format!("{} does not exist", root.display()),
    };
    announce(&format!(
        "libtorch {TORCH_VERSION} not found (LIBTORCH is unset and {found}): installing the PyPI wheel \
         torch=={TORCH_VERSION} there with pip (about 4.5 GB with its CUDA libraries; a few minutes)"
    ));
    let args = [root.as_os_str(), std::ffi::OsStr::new(TORCH_VERSION)];
    let (status, log) = run_installer(INSTALL_SCRIPT, &args, &lock, announce)?;
    if !status.success() || !installed(&dir) {
        bail!(
            "libtorch {TORCH_VERSION} is missing and could not be installed into {} ({}).\n    {}\n\
             If no package registry is reachable, install libtorch {TORCH_VERSION} yourself and set \
             LIBTORCH=/path/to/libtorch (the folder holding lib/ and include/).",
            root.display(),
            match status.code() {
                Some(c) => format!("the installer exited with status {c}"),
                None => "the installer was killed".to_string(),
            },
            log_tail(&log)
        );
    }
    announce(&format!("libtorch {TORCH_VERSION} installed in {}", dir.display()));
    Ok(Libtorch { dir })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_a_download_or_a_python_install() {
        let tmp = std::env::temp_dir().join(format!("arl-libtorch-version-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        assert_eq!(version_of(&tmp), None);
        std::fs::write(tmp.join("version.py"), "from typing import Optional\n__version__ = '2.12.0+cu128'\n").unwrap();
        assert_eq!(version_of(&tmp).as_deref(), Some("2.12.0"));
        std::fs::write(tmp.join("build-version"), "2.13.0+cpu\n").unwrap();
        assert_eq!(version_of(&tmp).as_deref(), Some("2.13.0"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn cargos_own_library_folders_are_dropped_and_the_users_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let toolchain = tmp.path().join("toolchains/stable");
        std::fs::create_dir_all(toolchain.join("lib/rustlib")).unwrap();
        let exe_dir = Path::new("/repo/target/debug");
        let value = format!(
            "/repo/target/debug/build/x-1/out:/repo/target/debug/deps:/repo/target/debug:\
             {t}/lib/rustlib/x86_64-unknown-linux-gnu/lib:{t}/lib:/opt/mine/lib::/usr/local/lib",
            t = toolchain.display()
        );
        let cargo = toolchain.join("bin/cargo");
        assert_eq!(without_cargo_dirs(&value, Some(exe_dir), Some(&cargo)), "/opt/mine/lib:/usr/local/lib");
        // Not started by cargo: the toolchain's folders are the user's business.
        let kept = without_cargo_dirs(&value, Some(exe_dir), None);
        assert!(kept.starts_with(&format!("{}/lib/rustlib", toolchain.display())), "{kept}");
        // rustup's proxy is not a toolchain: nothing more is dropped.
        let proxy = tmp.path().join("cargo-home/bin/cargo");
        assert_eq!(without_cargo_dirs("/a:/b", Some(exe_dir), Some(&proxy)), "/a:/b");
    }
}
