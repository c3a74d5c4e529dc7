//! What every handler shares: the engine, the feed service, the metrics registry and the
//! token settings.

use std::sync::Arc;

use kith_feed::Feed;
use kith_store::Engine;
use prometheus::Registry;

/// What handlers share.
#[derive(Clone, Debug)]
pub(crate) struct AppState {
    /// Users, profiles, data, listings and traversals.
    pub(crate) engine: Arc<dyn Engine>,
    /// Follows, posts, feeds, and every friendship write and friend-list read.
    pub(crate) feed: Arc<Feed>,
    pub(crate) registry: Registry,
    pub(crate) token: Option<Arc<crate::Secret>>,
    pub(crate) token_reads: bool,
    /// The dashboard's cached reads and its relayout job.
    pub(crate) ui: Arc<crate::ui::UiState>,
}
