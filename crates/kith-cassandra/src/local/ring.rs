//! Where a local cluster's nodes go: consecutive loopback addresses, their JMX ports, and
//! tokens spread evenly over Murmur3's range (a joining node halves the largest range).

use std::net::Ipv4Addr;

use crate::error::{Error, Result};

/// `n` consecutive loopback addresses from `base`.
pub(super) fn addresses(base: Ipv4Addr, n: usize) -> Result<Vec<Ipv4Addr>> {
    let o = base.octets();
    if o[0] != 127 {
        return Err(Error::Cluster(format!(
            "--base {base}: local clusters use loopback addresses (127.x.y.z)"
        )));
    }
    if o[3] == 0 || usize::from(o[3]) + n > 256 {
        return Err(Error::Cluster(format!(
            "--base {base}: {n} nodes do not fit after it in {}.{}.{}.x",
            o[0], o[1], o[2]
        )));
    }
    Ok((0..n).map(|i| Ipv4Addr::new(o[0], o[1], o[2], o[3] + i as u8)).collect())
}

pub(super) fn jmx_port(address: Ipv4Addr) -> u16 {
    let o = address.octets();
    7100 + 16 * u16::from(o[2]) + u16::from(o[3])
}

/// The token of node `i` of `n`, spread evenly over Murmur3's range.
pub(super) fn even_token(i: usize, n: usize) -> i64 {
    let step = (u64::MAX / n as u64).wrapping_add(1);
    (i64::MIN as u64).wrapping_add(step.wrapping_mul(i as u64)) as i64
}

/// The token halfway through the largest range between consecutive tokens (the ring wraps).
pub(super) fn bisecting_token(tokens: &[i64]) -> i64 {
    let mut sorted = tokens.to_vec();
    sorted.sort_unstable();
    let mut best = (0u64, sorted[0]);
    for (k, &t) in sorted.iter().enumerate() {
        let next = sorted[(k + 1) % sorted.len()];
        let gap = (next as u64).wrapping_sub(t as u64);
        let gap = if gap == 0 { u64::MAX } else { gap };
        if gap > best.0 {
            best = (gap, t);
        }
    }
    (best.1 as u64).wrapping_add(best.0 / 2) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_spread_evenly_and_a_new_one_halves_the_largest_range() {
        assert_eq!(even_token(0, 1), i64::MIN);
        let three: Vec<i64> = (0..3).map(|i| even_token(i, 3)).collect();
        assert!(three.windows(2).all(|w| w[0] < w[1]));
        let gap = i128::from(three[1]) - i128::from(three[0]);
        assert!((gap - (1i128 << 64) / 3).abs() <= 1);
        let two = [even_token(0, 2), even_token(1, 2)];
        assert_eq!(two, [i64::MIN, 0]);
        // The two ranges are equal; the first found is halved.
        assert_eq!(bisecting_token(&two), i64::MIN / 2);
        assert_eq!(bisecting_token(&[i64::MIN, i64::MIN / 2, 0]), i64::MAX / 2 + 1);
    }

    #[test]
    fn addresses_stay_on_loopback_and_inside_their_range() {
        let a = addresses(Ipv4Addr::new(127, 0, 3, 1), 3).unwrap();
        assert_eq!(a[2], Ipv4Addr::new(127, 0, 3, 3));
        assert!(
            addresses(Ipv4Addr::new(10, 0, 0, 1), 1).unwrap_err().to_string().contains("loopback")
        );
        assert!(addresses(Ipv4Addr::new(127, 0, 0, 250), 10).is_err());
        assert_eq!(jmx_port(Ipv4Addr::new(127, 0, 0, 1)), 7101);
        assert_eq!(jmx_port(Ipv4Addr::new(127, 0, 3, 2)), 7150);
    }
}
