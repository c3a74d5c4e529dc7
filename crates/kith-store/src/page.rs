//! Pages: of a friend list (offset and limit) and of the user listing (a cursor per layout
//! generation). Every friend-list page, whoever holds the list, is cut by [`friends_page`].

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::record::{MAX_PAGE, Profile};

/// A page of a friend list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FriendsPage {
    /// Friends' uids, ascending, from `offset`.
    pub friends: Vec<u64>,
    /// The user's friend count.
    pub total: usize,
}

/// A page of users, (uid, profile), and the cursor of the next page if there is one.
pub type UsersPage = (Vec<(u64, Profile)>, Option<UsersCursor>);

/// Where a page of [`Store::users_page`](crate::Store::users_page) ended: the layout generation and the last position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsersCursor {
    /// The layout generation the cursor belongs to.
    pub generation: u32,
    /// The last position returned.
    pub after: u64,
}

impl UsersCursor {
    /// The cursor as an opaque token.
    pub fn encode(&self) -> String {
        format!("g{:x}.{:x}", self.generation, self.after)
    }

    /// Reads a token made by [`UsersCursor::encode`].
    pub fn decode(token: &str) -> Option<UsersCursor> {
        let (g, p) = token.strip_prefix('g')?.split_once('.')?;
        Some(UsersCursor {
            generation: u32::from_str_radix(g, 16).ok()?,
            after: u64::from_str_radix(p, 16).ok()?,
        })
    }
}

/// Refuses a page larger than [`MAX_PAGE`]; `what` names the page in the error.
pub(crate) fn check_limit(what: &'static str, limit: usize) -> Result<()> {
    if limit > MAX_PAGE {
        return Err(Error::TooLarge { what, got: limit as u64, limit: MAX_PAGE as u64 });
    }
    Ok(())
}

/// The page of a whole friend list (uids ascending) from `offset`, at most `limit`
/// (≤ [`MAX_PAGE`]) entries, with the list's length as its total.
pub fn friends_page(friends: &[u64], offset: usize, limit: usize) -> Result<FriendsPage> {
    check_limit("friends page", limit)?;
    let page = page_range(friends.len(), offset, limit);
    Ok(FriendsPage { friends: friends[page].to_vec(), total: friends.len() })
}

/// The positions a page from `offset` of at most `limit` entries covers in a list of `len`:
/// empty past the end. Every friend-list page is cut here, whatever the list is made of.
pub(crate) fn page_range(len: usize, offset: usize, limit: usize) -> std::ops::Range<usize> {
    let from = offset.min(len);
    from..from.saturating_add(limit).min(len)
}
