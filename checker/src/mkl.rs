//! MKL's AVX2 code path on every x86-64 CPU with AVX2, not only on Intel's.
//!
//! The book's outputs assume MKL's conditional-numerical-reproducibility branch `AVX2`
//! (`MKL_CBWR=AVX2`, [`crate::run::DETERMINISM_ENV`]). MKL honours it on Intel CPUs only: on
//! an AMD EPYC it ignored `MKL_CBWR` (MKL_VERBOSE said `CNR:AUTO`, "Intel(R) Architecture
//! processors") and gave other bits, and the chapters that train turned them into other pass
//! rates. MKL decides "Intel or not" in one exported function of libtorch, so a library that
//! defines that function and is loaded first (`LD_PRELOAD`) makes MKL run the same AVX2
//! kernels, with the same results, on AMD's CPUs (which execute AVX2 and FMA as Intel's do).
//! On an Intel CPU it changes nothing: the function says what MKL finds anyway.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The library's source: MKL (oneMKL 2024.0, statically linked into `libtorch_cpu.so`, which
/// exports the symbol) asks this function whether the CPU is Intel's.
pub const SHIM_SOURCE: &str = "/* agentrl: MKL takes its CNR branches (MKL_CBWR) on any x86-64 CPU */\n\
int mkl_serv_intel_cpu_true(void) { return 1; }\n";

/// The symbol the library defines, for checks.
pub const SHIM_SYMBOL: &str = "mkl_serv_intel_cpu_true";

/// The path of the compiled library in `dir`, named by a digest of its source.
pub fn shim_path(dir: &Path) -> PathBuf {
    let digest = crate::hex(SHIM_SOURCE.as_bytes());
    dir.join(format!("libagentrl-mkl-cpu-{}.so", &digest[..12]))
}

/// The compiled library in `dir`, built with the C compiler (`$CC`, else `cc`: the linker
/// rustc uses on Linux, so it is there wherever the chapters build) when missing. It is
/// written under a temporary name and renamed, so a concurrent checker never loads half a file.
pub fn locate_or_build(dir: &Path) -> Result<PathBuf> {
    let cc = std::env::var("CC").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| "cc".into());
    locate_or_build_with(dir, &cc)
}

/// [`locate_or_build`] with the C compiler `cc`.
pub fn locate_or_build_with(dir: &Path, cc: &str) -> Result<PathBuf> {
    let path = shim_path(dir);
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let source = dir.join(format!("mkl-cpu-{}.c", std::process::id()));
    let partial = path.with_extension(format!("so.{}", std::process::id()));
    std::fs::write(&source, SHIM_SOURCE).with_context(|| format!("writing {}", source.display()))?;
    let out = Command::new(cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&partial)
        .arg(&source)
        .output()
        .with_context(|| format!("running the C compiler `{cc}` (set CC to another one)"))?;
    let _ = std::fs::remove_file(&source);
    if !out.status.success() {
        let _ = std::fs::remove_file(&partial);
        bail!(
            "`{cc}` could not build the library that keeps MKL on its AVX2 path ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    std::fs::rename(&partial, &path).with_context(|| format!("renaming {}", partial.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_built_once_and_defines_the_symbol() {
        let dir = std::env::temp_dir().join(format!("agentrl-mkl-test-{}", std::process::id()));
        let path = locate_or_build(&dir).unwrap();
        assert_eq!(path, shim_path(&dir));
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..4], b"\x7fELF", "not a shared library");
        let has_symbol = bytes.windows(SHIM_SYMBOL.len()).any(|w| w == SHIM_SYMBOL.as_bytes());
        assert!(has_symbol, "{} does not name {SHIM_SYMBOL}", path.display());
        let built = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(locate_or_build(&dir).unwrap(), path);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), built, "rebuilt");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failing_compiler_is_named_in_the_error() {
        let dir = std::env::temp_dir().join(format!("agentrl-mkl-fail-{}", std::process::id()));
        // `false` is a "compiler" that fails without a word
        let err = locate_or_build_with(&dir, "false").unwrap_err();
        assert!(format!("{err:#}").contains("`false` could not build"), "{err:#}");
        assert!(!shim_path(&dir).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
