//! The fan-out watermark in memory: which post ids are open (handed out, or taken from a
//! client or a redo, and not yet delivered to followers' timelines), and the watermark
//! below them that is persisted in the feed database.
//!
//! Invariant: every post id at or below the persisted watermark has been delivered (or
//! needs no delivery). The watermark never passes an open id, and an id opened at or below
//! it lowers it durably first, so after any crash the feed redoes the fan-out of every post
//! whose delivery may not have finished. Ids are opened under the same lock that hands them
//! out, so the watermark cannot pass an id between its allocation and its opening.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use kith_store::Engine;

use crate::error::{Error, Result};
use crate::post::IdGen;

#[derive(Debug)]
struct Inner {
    /// Open ids, with how many holders each has (a redo and a client may open the same).
    open: BTreeMap<u64, u32>,
    /// The largest id ever opened or handed out.
    highest: u64,
    /// The watermark as last stored.
    persisted: u64,
    /// The stored watermark may be gone (the number was taken over meanwhile): the next
    /// [`Marks::persist`] writes it whatever it was.
    unsure: bool,
}

/// The open ids and the watermark, shared by posting, fan-out and the keeper task.
#[derive(Debug)]
pub(crate) struct Marks {
    /// The server number whose watermark this is.
    server: u16,
    inner: Mutex<Inner>,
}

impl Marks {
    /// Starts with server `server`'s stored watermark and the largest post id known.
    pub(crate) fn new(server: u16, persisted: u64, highest: u64) -> Marks {
        Marks {
            server,
            inner: Mutex::new(Inner {
                open: BTreeMap::new(),
                highest: highest.max(persisted),
                persisted,
                unsure: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh id from `ids`, open until [`Marks::close`].
    pub(crate) fn allocate(&self, ids: &IdGen) -> u64 {
        let mut m = self.lock();
        let id = ids.next();
        *m.open.entry(id).or_default() += 1;
        m.highest = m.highest.max(id);
        id
    }

    /// Opens an id that did not come from `ids` (a client's, or one being redone): makes
    /// `ids` hand out only larger ones, and if the id is at or below the stored watermark,
    /// lowers the stored watermark below it (synced) before returning. Blocks on that write.
    /// `exclusive` refuses an id that is already open.
    pub(crate) fn claim(
        &self,
        id: u64,
        ids: &IdGen,
        engine: &dyn Engine,
        exclusive: bool,
    ) -> Result<()> {
        let mut m = self.lock();
        if exclusive && m.open.contains_key(&id) {
            return Err(Error::PostIdTaken(id));
        }
        ids.observe(id);
        if id <= m.persisted {
            engine.set_fanout_watermark(self.server, id.saturating_sub(1), true)?;
            m.persisted = id.saturating_sub(1);
        }
        *m.open.entry(id).or_default() += 1;
        m.highest = m.highest.max(id);
        Ok(())
    }

    /// The id's post is delivered, or needs no delivery, or was never acknowledged.
    pub(crate) fn close(&self, id: u64) {
        let mut m = self.lock();
        if let Some(n) = m.open.get_mut(&id) {
            *n -= 1;
            if *n == 0 {
                m.open.remove(&id);
            }
        }
    }

    /// The number was held by another server for a while (which may have dropped its
    /// watermark): store it again on the next persist, synced.
    pub(crate) fn unsure(&self) {
        self.lock().unsure = true;
    }

    /// Whether every id handed out or claimed has been delivered and the watermark stored
    /// at the highest: nothing is left for another server to redo.
    pub(crate) fn all_delivered(&self) -> bool {
        let m = self.lock();
        m.open.is_empty() && m.persisted == m.highest
    }

    /// How many ids are open.
    pub(crate) fn open_count(&self) -> usize {
        self.lock().open.len()
    }

    /// Stores the watermark if it moved: just below the oldest open id, or the highest id
    /// when none is open. Not synced: a raise lost in a crash only repeats fan-out.
    pub(crate) fn persist(&self, engine: &dyn Engine) -> Result<()> {
        let mut m = self.lock();
        let target = match m.open.keys().next() {
            Some(&oldest) => oldest.saturating_sub(1),
            None => m.highest,
        };
        if target != m.persisted || m.unsure {
            engine.set_fanout_watermark(self.server, target, m.unsure)?;
            m.persisted = target;
            m.unsure = false;
        }
        Ok(())
    }
}
