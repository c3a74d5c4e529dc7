//! The engine contract's server numbers: claims, renewals, releases and lapsed leases, with
//! the fan-out watermark that makes a released number an orphan (split from `contract`).

use crate::Engine;

/// Server numbers: distinct while held, renewed only by their owner, free again once
/// released; a released number with a stored watermark is an orphan until it is dropped.
pub(super) fn check_servers(engine: &dyn Engine) {
    let lease = std::time::Duration::from_secs(60);
    let slots = engine.server_slots();
    let a = engine.claim_server("owner-a", lease, None).unwrap().expect("a free number");
    assert!(a < slots, "server {a} of {slots}");
    assert!(engine.renew_server(a, "owner-a", lease).unwrap());
    // A claim again by the same owner (its first claim's answer lost) finds its number.
    assert_eq!(engine.claim_server("owner-a", lease, None).unwrap(), Some(a), "claimed again");
    assert_eq!(engine.claim_server("owner-a", lease, Some(a)).unwrap(), Some(a), "its own");
    if slots > 1 {
        let b = engine.claim_server("owner-b", lease, None).unwrap().expect("a second number");
        assert_ne!(a, b);
        assert_eq!(engine.claim_server("owner-c", lease, Some(a)).unwrap(), None, "taken");
        assert!(!engine.renew_server(a, "owner-b", lease).unwrap(), "renewed by another");
        engine.set_fanout_watermark(b, 9, true).unwrap();
        assert_eq!(engine.fanout_watermark(b).unwrap(), Some(9));
        assert!(!engine.orphaned_servers(lease).unwrap().contains(&b), "held, not orphaned");
        engine.release_server(b, "owner-b").unwrap();
        assert!(engine.orphaned_servers(lease).unwrap().contains(&b));
        engine.drop_fanout_watermark(b).unwrap();
        assert!(!engine.orphaned_servers(lease).unwrap().contains(&b));
        assert_eq!(engine.fanout_watermark(b).unwrap(), None);
        assert_eq!(engine.claim_server("owner-c", lease, Some(b)).unwrap(), Some(b), "free again");
        engine.release_server(b, "owner-c").unwrap();
        check_lapse(engine);
    }
    engine.release_server(a, "owner-a").unwrap();
}

/// A number whose owner stopped renewing is free once its lease has passed, and not
/// before; its owner cannot renew it after another took it, and a renewal keeps it.
fn check_lapse(engine: &dyn Engine) {
    let lease = std::time::Duration::from_secs(4);
    let d = engine.claim_server("owner-d", lease, None).unwrap().expect("a free number");
    engine.set_fanout_watermark(d, 3, true).unwrap();
    assert_eq!(engine.claim_server("owner-e", lease, Some(d)).unwrap(), None, "held");
    assert!(!engine.orphaned_servers(lease).unwrap().contains(&d), "held, not orphaned");
    std::thread::sleep(lease / 2);
    assert_eq!(engine.claim_server("owner-e", lease, Some(d)).unwrap(), None, "not before");
    // Renewed halfway: the lease runs from here.
    assert!(engine.renew_server(d, "owner-d", lease).unwrap());
    std::thread::sleep(lease * 3 / 4);
    assert_eq!(engine.claim_server("owner-e", lease, Some(d)).unwrap(), None, "renewed");
    assert!(!engine.orphaned_servers(lease).unwrap().contains(&d), "renewed, not orphaned");
    std::thread::sleep(lease + lease / 4);
    assert!(engine.orphaned_servers(lease).unwrap().contains(&d), "lapsed: an orphan");
    assert_eq!(engine.claim_server("owner-e", lease, Some(d)).unwrap(), Some(d), "lapsed");
    assert!(!engine.renew_server(d, "owner-d", lease).unwrap(), "taken by another");
    assert!(engine.renew_server(d, "owner-e", lease).unwrap());
    assert!(!engine.orphaned_servers(lease).unwrap().contains(&d), "held again");
    engine.drop_fanout_watermark(d).unwrap();
    engine.release_server(d, "owner-d").unwrap();
    assert_eq!(engine.claim_server("owner-f", lease, Some(d)).unwrap(), None, "still e's");
    engine.release_server(d, "owner-e").unwrap();
    assert_eq!(engine.claim_server("owner-f", lease, Some(d)).unwrap(), Some(d), "released");
    engine.release_server(d, "owner-f").unwrap();
}
