//! A simulated file system for the journal's tests, in memory: it tracks what is durable
//! (bytes up to each file's last sync, directory entries as of the last directory sync),
//! can fill up, fail syncs, and lose power, after which only the durable state is left, plus
//! a random part of each file's unsynced bytes, possibly zeroed, as a real crash can leave.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::fs::{AppendFile, Fs};

#[derive(Clone, Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced: Vec<u8>,
}

#[derive(Debug, Default)]
struct State {
    inodes: Vec<Inode>,
    names: BTreeMap<PathBuf, usize>,
    durable_names: BTreeMap<PathBuf, usize>,
    /// Bytes all files may hold together.
    space: Option<usize>,
    fail_syncs: bool,
    ops: u64,
    /// Power is lost at this mutating operation.
    crash_at: Option<u64>,
    rng: u64,
    /// What the disk holds after power was lost.
    image: Option<BTreeMap<PathBuf, Vec<u8>>>,
}

impl State {
    fn random(&mut self) -> u64 {
        // xorshift64: enough to pick tear points.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn crash_image(&mut self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for (name, ino) in self.durable_names.clone() {
            let inode = self.inodes[ino].clone();
            let mut bytes = inode.synced.clone();
            if inode.data.len() > bytes.len() && inode.data.starts_with(&bytes) {
                let unsynced = &inode.data[bytes.len()..];
                let keep = (self.random() % (unsynced.len() as u64 + 1)) as usize;
                match self.random() % 3 {
                    0 => bytes.extend_from_slice(&unsynced[..keep]),
                    1 => bytes.resize(bytes.len() + keep, 0),
                    _ => {}
                }
            }
            out.insert(name, bytes);
        }
        out
    }

    /// Counts a mutating operation; fails it if power is (now) lost.
    fn tick(&mut self) -> io::Result<()> {
        if self.image.is_none() {
            self.ops += 1;
            if self.crash_at.is_some_and(|at| self.ops >= at) {
                let image = self.crash_image();
                self.image = Some(image);
            }
        }
        self.alive()
    }

    fn alive(&self) -> io::Result<()> {
        match self.image {
            Some(_) => Err(io::Error::other("the power is off")),
            None => Ok(()),
        }
    }

    fn used(&self) -> usize {
        self.names.values().map(|&i| self.inodes[i].data.len()).sum()
    }
}

/// The simulated file system; clones share it.
#[derive(Clone, Debug, Default)]
pub(crate) struct SimFs(Arc<Mutex<State>>);

impl SimFs {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Loses power at the `op`-th mutating operation from now; `seed` picks the tears.
    pub(crate) fn crash_after(&self, op: u64, seed: u64) {
        let mut s = self.state();
        s.crash_at = Some(s.ops + op);
        s.rng = seed | 1;
    }

    /// Whether power has been lost.
    pub(crate) fn is_dead(&self) -> bool {
        self.state().image.is_some()
    }

    /// Limits the bytes all files hold together (`None`: no limit).
    pub(crate) fn set_space(&self, space: Option<usize>) {
        self.state().space = space;
    }

    /// Makes every sync fail (or succeed again).
    pub(crate) fn set_fail_syncs(&self, fail: bool) {
        self.state().fail_syncs = fail;
    }

    /// The file system after power is lost (now, unless it was already): only durable
    /// state and a random part of what was not synced.
    pub(crate) fn after_power_loss(&self, seed: u64) -> SimFs {
        let mut s = self.state();
        if s.image.is_none() {
            s.rng = seed | 1;
            let image = s.crash_image();
            s.image = Some(image);
        }
        let image = s.image.clone().expect("set above");
        drop(s);
        let fresh = SimFs::default();
        for (name, bytes) in image {
            fresh.put(&name, bytes);
        }
        fresh
    }

    /// Writes a whole file, durably.
    pub(crate) fn put(&self, path: &Path, bytes: Vec<u8>) {
        let mut s = self.state();
        let ino = s.inodes.len();
        s.inodes.push(Inode { data: bytes.clone(), synced: bytes });
        s.names.insert(path.to_path_buf(), ino);
        s.durable_names.insert(path.to_path_buf(), ino);
    }

    /// A file's current bytes.
    pub(crate) fn get(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.state();
        s.names.get(path).map(|&i| s.inodes[i].data.clone())
    }
}

struct SimFile {
    fs: SimFs,
    ino: usize,
}

impl AppendFile for SimFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut s = self.fs.state();
        s.tick()?;
        let free = s.space.map_or(usize::MAX, |space| space.saturating_sub(s.used()));
        let n = bytes.len().min(free);
        s.inodes[self.ino].data.extend_from_slice(&bytes[..n]);
        if n < bytes.len() {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "No space left on device"));
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut s = self.fs.state();
        s.tick()?;
        if s.fail_syncs {
            return Err(io::Error::other("Input/output error (a failing sync, simulated)"));
        }
        let inode = &mut s.inodes[self.ino];
        inode.synced = inode.data.clone();
        Ok(())
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        let mut s = self.fs.state();
        s.tick()?;
        s.inodes[self.ino].data.truncate(len as usize);
        Ok(())
    }
}

impl Fs for SimFs {
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        self.state().alive()
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let s = self.state();
        s.alive()?;
        Ok(s.names.keys().filter(|p| p.parent() == Some(dir)).cloned().collect())
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        let s = self.state();
        s.alive()?;
        let ino = *s.names.get(path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(Box::new(io::Cursor::new(s.inodes[ino].data.clone())))
    }

    fn create_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let mut s = self.state();
        s.tick()?;
        let ino = match s.names.get(path) {
            Some(&ino) => ino,
            None => {
                s.inodes.push(Inode::default());
                let ino = s.inodes.len() - 1;
                s.names.insert(path.to_path_buf(), ino);
                ino
            }
        };
        Ok(Box::new(SimFile { fs: self.clone(), ino }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state();
        s.tick()?;
        s.names.remove(path).map(drop).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state();
        s.tick()?;
        let ino = s.names.remove(from).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        s.names.insert(to.to_path_buf(), ino);
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        let mut s = self.state();
        s.tick()?;
        s.durable_names = s.names.clone();
        Ok(())
    }
}
