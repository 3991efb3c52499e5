//! Where the MPI library and its header are, found from the location of the
//! running executable, so that the tools work straight from the cargo target
//! directory (`target/<profile>/`) as well as from an installed prefix
//! (`<prefix>/bin`, `<prefix>/lib`, `<prefix>/include`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The file name of the MPI library.
pub const LIBMPI: &str = "libmpi.so";

/// The names programs look for: ours (`libmpi.so.12`) and the one Debian's
/// `mpicc.mpich` records as NEEDED (`libmpich.so.12`).
pub const LIBMPI_ALIASES: [&str; 2] = ["libmpi.so.12", "libmpich.so.12"];

/// The directory of the running executable, symlinks resolved.
pub fn exe_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot locate the running executable", e))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::Usage(format!("executable path {} has no directory", exe.display())))
}

/// The directory that holds (or should hold) `libmpi.so` for tools living in
/// `exe_dir`: `exe_dir` itself when the library is there (cargo target
/// directory), else `exe_dir/../lib` (installed prefix).
pub fn lib_dir(exe_dir: &Path) -> PathBuf {
    if exe_dir.join(LIBMPI).exists() {
        exe_dir.to_path_buf()
    } else {
        prefix_dir(exe_dir, "lib")
    }
}

/// The directory that holds `mpi.h` for tools living in `exe_dir`, and the
/// matching library directory: `exe_dir/include` and `exe_dir` when the
/// header is there (the library's build script writes
/// `target/<profile>/include/mpi.h`), else the prefix layout.
pub fn include_and_lib_dirs(exe_dir: &Path) -> (PathBuf, PathBuf) {
    let inc = exe_dir.join("include");
    if inc.join("mpi.h").exists() {
        (inc, exe_dir.to_path_buf())
    } else {
        (prefix_dir(exe_dir, "include"), prefix_dir(exe_dir, "lib"))
    }
}

/// `exe_dir/../<sub>`, lexically simplified when `exe_dir` has a parent.
fn prefix_dir(exe_dir: &Path, sub: &str) -> PathBuf {
    match exe_dir.parent() {
        Some(parent) => parent.join(sub),
        None => exe_dir.join("..").join(sub),
    }
}

/// Creates the `libmpi.so.12` and `libmpich.so.12` symlinks to `libmpi.so`
/// in `dir` where they are missing. Returns the names it could not create
/// (read-only directory...); names that exist already are left alone.
pub fn ensure_library_aliases(dir: &Path) -> Vec<(String, std::io::Error)> {
    let mut failures = Vec::new();
    if !dir.join(LIBMPI).exists() {
        return failures;
    }
    for alias in LIBMPI_ALIASES {
        let path = dir.join(alias);
        if path.symlink_metadata().is_ok() {
            continue;
        }
        match std::os::unix::fs::symlink(LIBMPI, &path) {
            Ok(()) => {}
            // Another launcher made it at the same moment.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => failures.push((alias.to_string(), e)),
        }
    }
    failures
}

/// `dir` prepended to a colon-separated search path.
pub fn prepend_path(dir: &Path, old: Option<&str>) -> String {
    let dir = dir.display().to_string();
    match old {
        Some(old) if !old.is_empty() => format!("{dir}:{old}"),
        _ => dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepend() {
        assert_eq!(prepend_path(Path::new("/a"), None), "/a");
        assert_eq!(prepend_path(Path::new("/a"), Some("")), "/a");
        assert_eq!(prepend_path(Path::new("/a"), Some("/b:/c")), "/a:/b:/c");
    }

    #[test]
    fn layouts() {
        let tmp = std::env::temp_dir().join(format!("mpil-paths-{}", std::process::id()));
        let bin = tmp.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        assert_eq!(lib_dir(&bin), tmp.join("lib"));
        assert_eq!(include_and_lib_dirs(&bin), (tmp.join("include"), tmp.join("lib")));
        std::fs::write(bin.join(LIBMPI), b"").unwrap();
        std::fs::create_dir_all(bin.join("include")).unwrap();
        std::fs::write(bin.join("include/mpi.h"), b"").unwrap();
        assert_eq!(lib_dir(&bin), bin);
        assert_eq!(include_and_lib_dirs(&bin), (bin.join("include"), bin.clone()));
        assert!(ensure_library_aliases(&bin).is_empty());
        for alias in LIBMPI_ALIASES {
            assert_eq!(std::fs::read_link(bin.join(alias)).unwrap(), Path::new(LIBMPI));
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
