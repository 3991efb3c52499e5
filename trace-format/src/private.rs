//! Files and folders of a trace, readable by their owner only.
//!
//! A trace holds the command line, the environment's host names and the
//! paths of the loaded modules: files are made 0600 and folders 0700
//! whatever the umask (the mode given at creation only loses bits to the
//! umask; the explicit chmod after it makes the mode exact, and also
//! tightens a file or folder that existed before).

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of every trace file.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every folder a trace writer creates.
pub const DIR_MODE: u32 = 0o700;

/// Opens `path` with `opts` (which create it if need be) as a private file.
pub fn open(opts: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = opts.mode(FILE_MODE).open(path)?;
    // On the open file: no window where another name could be changed.
    file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Creates (truncating) the private file `path` for writing.
pub fn create(path: &Path) -> io::Result<File> {
    open(OpenOptions::new().write(true).create(true).truncate(true), path)
}

/// Creates folder `path` and its missing parents, each private; folders
/// that existed are left as they are (the trace's folder may be one the
/// user made, or `.`).
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let missing: Vec<&Path> = path.ancestors().take_while(|p| !p.as_os_str().is_empty() && !p.exists()).collect();
    std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(path)?;
    for dir in missing {
        std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_whatever_existed() {
        let base = std::env::temp_dir().join(format!("trace-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        std::fs::set_permissions(&base, Permissions::from_mode(0o755)).unwrap();
        let deep = base.join("a/b");
        create_dir_all(&deep).unwrap();
        assert_eq!((mode(&base), mode(&base.join("a")), mode(&deep)), (0o755, DIR_MODE, DIR_MODE));
        create_dir_all(&deep).unwrap();
        let f = deep.join("f");
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, Permissions::from_mode(0o644)).unwrap();
        create(&f).unwrap().write_all(b"y").unwrap();
        assert_eq!(mode(&f), FILE_MODE);
        open(OpenOptions::new().append(true).create(true), &deep.join("g")).unwrap();
        assert_eq!(mode(&deep.join("g")), FILE_MODE);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
