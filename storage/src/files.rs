//! Files and directories that hold secrets or personal data: the owner's alone (files 0600,
//! directories 0700) from the moment they exist, whatever the process's umask.
//!
//! A mode is given at creation (`O_CREAT` with 0600, `mkdir` with 0700), never by a `chmod`
//! after the content is written: between the two, another user could open the file, and an
//! open file stays readable after its mode changes. This module creates; it decides nothing
//! about where the files go.

use std::{
    fs::{DirBuilder, File, OpenOptions},
    io::{self, Write},
    os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt},
    path::Path,
};

/// The mode of a file only its owner may read and write.
pub const PRIVATE_FILE: u32 = 0o600;
/// The mode of a directory only its owner may list, enter and change.
pub const PRIVATE_DIR: u32 = 0o700;
/// Group and others' read and write bits.
const OTHERS_RW: u32 = 0o066;

/// Whether permission bits let anyone but the owner read or write the file.
pub fn open_to_others(mode: u32) -> bool {
    mode & OTHERS_RW != 0
}

/// Creates a new file, mode 0600, for writing; an existing one is refused (`AlreadyExists`),
/// so the mode is always the one given here.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE)
        .open(path)
}

/// Writes `bytes` to `path` whole or not at all, mode 0600: into `.<name>.tmp` beside it
/// (a leftover of an interrupted write is replaced), then renamed. A reader that skips names
/// starting with `.` never sees a partial file.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a path without a name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let written = create_private_file(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Creates the directory `path`, mode 0700 (its missing parents get the usual mode); an
/// existing directory is left as it is.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(PRIVATE_DIR).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// [`create_private_dir`], and an existing directory made 0700 too: for a directory that
/// belongs to the server alone (a data directory).
pub fn private_dir(path: &Path) -> io::Result<()> {
    create_private_dir(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(PRIVATE_DIR))
}

/// The permission bits of the file at `path` (the target of a link), or `None` when there is
/// no file.
pub fn mode_of(path: &Path) -> io::Result<Option<u32>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(m.permissions().mode() & 0o7777)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn mode(path: &Path) -> u32 {
        mode_of(path).unwrap().unwrap() & 0o777
    }

    #[test]
    fn open_to_others_is_any_read_or_write_bit_of_group_or_others() {
        for owner_only in [0o600, 0o400, 0o700, 0o200, 0o611, 0o4600] {
            assert!(!open_to_others(owner_only), "{owner_only:o}");
        }
        for shared in [
            0o644, 0o640, 0o620, 0o604, 0o602, 0o660, 0o666, 0o777, 0o4640,
        ] {
            assert!(open_to_others(shared), "{shared:o}");
        }
    }

    // The process's umask is whatever the test runner has; 0600 and 0700 hold under any umask
    // that leaves the owner's bits alone, and these files are made with no other bits.
    #[test]
    fn files_and_directories_are_created_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a");
        create_private_file(&file).unwrap().write_all(b"x").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(
            create_private_file(&file).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists,
            "never reopened, so never another mode"
        );

        let whole = tmp.path().join("b.json");
        // A leftover of an interrupted write, made with a wider mode, is replaced.
        std::fs::write(tmp.path().join(".b.json.tmp"), b"half").unwrap();
        std::fs::set_permissions(
            tmp.path().join(".b.json.tmp"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        write_private_file(&whole, b"{}").unwrap();
        assert_eq!(std::fs::read(&whole).unwrap(), b"{}");
        assert_eq!(mode(&whole), 0o600);
        assert!(!tmp.path().join(".b.json.tmp").exists());

        let dir = tmp.path().join("p/q");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        create_private_dir(&dir).unwrap();
        // An existing directory: left alone by the one, made private by the other.
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir(&shared).unwrap();
        assert_eq!(mode(&shared), 0o755);
        private_dir(&shared).unwrap();
        assert_eq!(mode(&shared), 0o700);
        // A file where a directory should be is an error.
        assert!(create_private_dir(&file).is_err());
        assert_eq!(mode_of(&tmp.path().join("none")).unwrap(), None);
    }
}
