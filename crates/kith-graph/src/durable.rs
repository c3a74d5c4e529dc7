//! The seam every file kith writes itself goes through (snapshots, layout files, edge lists,
//! communities): a small file-system trait, as redb and fjall have, and [`write_atomic`],
//! which replaces a file so that a crash or power loss at any moment leaves either the
//! complete old file or the complete new one.
//!
//! The protocol: write a temporary file beside the target, fsync it, rename it over the
//! target, fsync the directory. The file's fsync comes before the rename, so a rename that
//! reaches the disk early (as ext4 and XFS may commit metadata before data) never exposes an
//! empty or partial file; the directory's fsync makes the rename itself durable before the
//! write is reported done. [`PowerCutFs`] checks this: it keeps only what was fsynced and
//! can lose power at any step.
//!
//! RocksDB's files are not written here (RocksDB syncs them itself), nor is the feed's
//! journal, which appends and has its own recovery.

use std::io::{self, BufWriter, Write};

use flate2::Compression;
use flate2::write::GzEncoder;
use std::path::{Path, PathBuf};

mod power_cut;

pub use power_cut::{CutVariant, FileWriter, PowerCutFs};

/// A file being written through an [`Fs`].
pub trait FsFile: Write + Send {
    /// Makes everything written so far durable (`fsync`).
    fn sync_all(&mut self) -> io::Result<()>;
}

/// The file-system operations kith's own writers need.
pub trait Fs: Send + Sync + std::fmt::Debug {
    /// Creates `path`, truncating it if it exists, for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Renames `from` over `to`, atomically replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

impl FsFile for std::fs::File {
    fn sync_all(&mut self) -> io::Result<()> {
        std::fs::File::sync_all(self)
    }
}

impl Fs for StdFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(std::fs::File::create(path)?))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
}

/// The directory `path` is in (`.` for a bare name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The temporary name `path` is written under before it is renamed into place: hidden, in
/// the same directory (a rename is atomic only within one file system), and unique per
/// process so two processes writing the same target do not share one.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    parent_dir(path).join(format!(".{name}.tmp{}", std::process::id()))
}

/// Replaces `path` with what `body` writes, durably and atomically: after a crash at any
/// point the file is the complete old one (or absent, if there was none) or the complete new
/// one, and once this returns `Ok` it is the new one.
///
/// # Errors
/// Whatever `body` or the file system returns; the temporary file is then removed (best
/// effort) and `path` is untouched.
pub fn write_atomic(
    fs: &dyn Fs,
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temp_path(path);
    let mut file = fs.create(&tmp)?;
    let written = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, &mut file);
        body(&mut w)?;
        w.flush()?;
        drop(w);
        file.sync_all()
    })();
    drop(file);
    if let Err(e) = written.and_then(|()| fs.rename(&tmp, path)) {
        let _ = fs.remove_file(&tmp);
        return Err(e);
    }
    fs.sync_dir(&parent_dir(path))
}

/// [`write_atomic`] for a text file, gzip-compressed when its name ends in `.gz` (in any
/// case): what kith's edge lists, community files and layout files are written with.
///
/// # Errors
/// As [`write_atomic`].
pub fn write_text_atomic(
    fs: &dyn Fs,
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let gz =
        path.file_name().is_some_and(|n| n.to_string_lossy().to_ascii_lowercase().ends_with(".gz"));
    write_atomic(fs, path, |w| {
        if gz {
            let mut gz = GzEncoder::new(w, Compression::fast());
            body(&mut gz)?;
            gz.finish()?.flush()
        } else {
            body(w)
        }
    })
}

#[cfg(test)]
mod tests;
