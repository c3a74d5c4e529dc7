//! A server's number on a shared store, claimed at start: a store briefly unavailable (a
//! Cassandra node down, a lightweight transaction timed out) delays the start rather than
//! failing it.

use kith_store::Engine;

use super::LEASE;

/// Waits between claims of a server number that met a store unavailable for the moment
/// (a node down, a lightweight transaction timed out): the server starts once the store
/// answers, and fails after the last wait.
const CLAIM_BACKOFF_MS: [u64; 5] = [250, 500, 1000, 2000, 4000];

/// Claims a free server number for `owner`, trying again after a transient store error.
pub(super) fn claim_number<E: Engine + ?Sized>(
    engine: &E,
    owner: &str,
) -> kith_store::Result<Option<u16>> {
    retrying(
        &CLAIM_BACKOFF_MS,
        || engine.claim_server(owner, LEASE, None),
        |why, ms| {
            eprintln!("kith: claiming a server number: {why}; trying again in {ms} ms");
            std::thread::sleep(std::time::Duration::from_millis(ms));
        },
    )
}

/// Runs `attempt` until it succeeds or fails other than `Unavailable`, calling `wait` with
/// the error and each of `waits_ms` in turn between attempts; the last error once they
/// run out.
fn retrying<T>(
    waits_ms: &[u64],
    mut attempt: impl FnMut() -> kith_store::Result<T>,
    mut wait: impl FnMut(&str, u64),
) -> kith_store::Result<T> {
    let mut waits = waits_ms.iter();
    loop {
        match attempt() {
            Err(kith_store::Error::Unavailable(why)) => match waits.next() {
                Some(&ms) => wait(&why, ms),
                None => return Err(kith_store::Error::Unavailable(why)),
            },
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::retrying;
    use kith_store::Error;

    #[test]
    fn a_claim_is_tried_again_while_the_store_is_unavailable() {
        let mut left = 3;
        let mut waited = Vec::new();
        let got = retrying(
            &[1, 2, 4, 8],
            || {
                if left == 0 {
                    return Ok(Some(7u16));
                }
                left -= 1;
                Err(Error::Unavailable("write timeout".into()))
            },
            |why, ms| waited.push((why.to_string(), ms)),
        );
        assert_eq!(got.unwrap(), Some(7));
        assert_eq!(waited.iter().map(|w| w.1).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(waited[0].0, "write timeout");
    }

    #[test]
    fn a_claim_gives_up_after_the_last_wait_and_at_once_on_other_errors() {
        let mut tries = 0;
        let got: kith_store::Result<Option<u16>> = retrying(
            &[1, 2],
            || {
                tries += 1;
                Err(Error::Unavailable("down".into()))
            },
            |_, _| {},
        );
        assert!(matches!(got, Err(Error::Unavailable(_))));
        assert_eq!(tries, 3);
        let mut tries = 0;
        let got: kith_store::Result<Option<u16>> = retrying(
            &[1, 2],
            || {
                tries += 1;
                Err(Error::Invalid("bad".into()))
            },
            |_, _| {},
        );
        assert!(matches!(got, Err(Error::Invalid(_))));
        assert_eq!(tries, 1);
        // Every number held: no retry, the caller reports it.
        let got = retrying(&[1], || Ok(None::<u16>), |_, _| panic!("no wait"));
        assert_eq!(got.unwrap(), None);
    }
}
