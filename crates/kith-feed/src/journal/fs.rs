//! The journal's one seam to the file system: the few operations it uses, as a trait, so
//! that tests can run it over a file system that fills up, fails syncs or loses power
//! (`journal/sim.rs`), and [`RealFs`], the operating system's.
//!
//! Assumptions about the media, which the simulated file system models: bytes written
//! are durable only once the file is synced; a new, renamed or removed directory entry only
//! once the directory is synced; a crash may leave any part of the unsynced bytes, or zeros
//! in their place.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// A file the journal appends to.
pub(crate) trait AppendFile: Send {
    /// Appends all of `bytes`; on error some of them may have been written.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Makes every byte appended so far durable (`fdatasync`).
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file to `len` bytes (durable after the next [`AppendFile::sync`]).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

/// The file-system operations of the journal.
pub(crate) trait Fs: Send + Sync {
    /// Creates `dir` and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The paths of the entries of `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Opens a file for reading.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;
    /// Creates (or opens) a file for appending.
    fn create_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Renames a file.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory's entries durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RealFs;

struct RealFile(File);

impl AppendFile for RealFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        // The file is opened for appending, so the next write lands at the new end.
        self.0.set_len(len)
    }
}

impl Fs for RealFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect()
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(File::open(path)?))
    }

    fn create_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        Ok(Box::new(RealFile(OpenOptions::new().create(true).append(true).open(path)?)))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}
