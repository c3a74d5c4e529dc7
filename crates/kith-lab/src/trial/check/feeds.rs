//! Feeds once quiet: each server's first page of each user's feed against a pull of the
//! same followees' posts read from the store. Both are the newest posts first, cut at the
//! same page size; where a page is full, only ids down to its last one are compared.

use std::collections::BTreeSet;

use super::{Anomalies, State};

/// Judges every feed page of `quiet` against its pull.
pub fn check(quiet: &State, found: &mut Anomalies) {
    for (server, feeds) in quiet.feeds.iter().enumerate() {
        for (uid, feed) in feeds {
            let Some(pull) = quiet.pulls.get(uid) else { continue };
            let (missing, extra) = compare(feed, pull);
            for id in missing {
                found.add("feed-missing", || {
                    format!("server {server}: feed of {uid} lacks post {id}")
                });
            }
            for id in extra {
                found.add("feed-extra", || {
                    format!("server {server}: feed of {uid} holds post {id}")
                });
            }
        }
    }
}

/// Posts of `pull` missing from `feed`, and posts of `feed` not in `pull`, compared above
/// the higher of the two pages' last ids when both are cut at the same size.
pub fn compare(feed: &[u64], pull: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let page = feed.len().max(pull.len());
    let floor = |p: &[u64]| if p.len() == page { p.iter().copied().min().unwrap_or(0) } else { 0 };
    let floor = floor(feed).max(floor(pull));
    let f: BTreeSet<u64> = feed.iter().copied().filter(|&i| i >= floor).collect();
    let p: BTreeSet<u64> = pull.iter().copied().filter(|&i| i >= floor).collect();
    (p.difference(&f).copied().collect(), f.difference(&p).copied().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_compare_down_to_the_higher_cut() {
        assert_eq!(compare(&[9, 7, 5], &[9, 7, 5]), (vec![], vec![]));
        assert_eq!(compare(&[9, 5], &[9, 7, 5]), (vec![7], vec![]));
        // Both full pages of 3: the feed's cut is 5, the pull's 6; below 6 is not compared.
        assert_eq!(compare(&[9, 7, 5], &[9, 8, 6]), (vec![6, 8], vec![7]));
        assert_eq!(compare(&[], &[]), (vec![], vec![]));
        assert_eq!(compare(&[4], &[]), (vec![], vec![4]));
    }

    #[test]
    fn every_server_is_judged() {
        let mut quiet = State::default();
        quiet.pulls.insert(1, vec![3, 2]);
        quiet.feeds = vec![[(1, vec![3, 2])].into(), [(1, vec![3])].into()];
        let mut found = Anomalies::default();
        check(&quiet, &mut found);
        assert_eq!(found.count("feed-missing"), 1);
        assert_eq!(found.total(), 1);
    }
}
