//! Truncated power laws: sampling integer values with a given exponent and mean, and fitting
//! the exponent back from data by maximum likelihood.

use rand::Rng;

/// A continuous power law `p(x) ∝ x^-exponent` on `[min, max]`, rounded to integers when
/// sampled.
#[derive(Clone, Copy, Debug)]
pub struct PowerLaw {
    pub exponent: f64,
    pub min: f64,
    pub max: f64,
}

impl PowerLaw {
    /// The power law on `[min, max]` whose mean is `mean`, found by bisection on `min`.
    /// `None` if no `min` in `[1, mean]` gives that mean.
    pub fn with_mean(exponent: f64, mean: f64, max: f64) -> Option<PowerLaw> {
        let (mut lo, mut hi) = (1.0, mean);
        let at = |min: f64| PowerLaw { exponent, min, max };
        if at(lo).mean() > mean || at(hi).mean() < mean {
            return None;
        }
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if at(mid).mean() < mean { lo = mid } else { hi = mid }
        }
        Some(at(0.5 * (lo + hi)))
    }

    /// The mean of the continuous distribution.
    pub fn mean(&self) -> f64 {
        let (a, lo, hi) = (self.exponent, self.min, self.max);
        if (hi - lo).abs() < 1e-12 {
            return lo;
        }
        let moment = |k: f64| {
            if (k - a + 1.0).abs() < 1e-9 {
                hi.ln() - lo.ln()
            } else {
                (hi.powf(k - a + 1.0) - lo.powf(k - a + 1.0)) / (k - a + 1.0)
            }
        };
        moment(1.0) / moment(0.0)
    }

    /// Draws one value by inverting the distribution function, rounded to the nearest integer.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.random();
        let a = 1.0 - self.exponent;
        let x = if a.abs() < 1e-9 {
            (self.min.ln() + u * (self.max.ln() - self.min.ln())).exp()
        } else {
            (self.min.powf(a) + u * (self.max.powf(a) - self.min.powf(a))).powf(1.0 / a)
        };
        x.round().clamp(self.min.round(), self.max.round()) as u64
    }
}

/// The maximum-likelihood exponent of a discrete power law truncated to `[min, max]`, fitted to
/// the values of `data` in that range.
///
/// The truncated likelihood is `Π k_i^-α / Z(α)` with `Z(α) = Σ_{k=min}^{max} k^-α`; its
/// maximum is found by golden-section search on `α ∈ (1, 6)`, where it is unimodal.
///
/// # Example
/// ```
/// use kith_graph::generate::fit_power_law_exponent;
/// let data: Vec<u64> = (1..=1000u64).flat_map(|k| std::iter::repeat(k).take((1e7 / (k * k * k) as f64) as usize)).collect();
/// assert!((fit_power_law_exponent(&data, 1, 1000) - 3.0).abs() < 0.05);
/// ```
pub fn fit_power_law_exponent(data: &[u64], min: u64, max: u64) -> f64 {
    let kept: Vec<f64> =
        data.iter().filter(|&&k| k >= min && k <= max).map(|&k| k as f64).collect();
    if kept.is_empty() || min == 0 {
        return f64::NAN;
    }
    let n = kept.len() as f64;
    let sum_ln: f64 = kept.iter().map(|k| k.ln()).sum();
    let log_likelihood = |alpha: f64| {
        let z: f64 = (min..=max).map(|k| (k as f64).powf(-alpha)).sum();
        -alpha * sum_ln - n * z.ln()
    };
    let (mut lo, mut hi) = (1.0001, 6.0);
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..80 {
        let a = hi - golden * (hi - lo);
        let b = lo + golden * (hi - lo);
        if log_likelihood(a) < log_likelihood(b) { lo = a } else { hi = b }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn mean_is_hit_and_exponent_recovered() {
        let law = PowerLaw::with_mean(2.5, 20.0, 1000.0).unwrap();
        assert!((law.mean() - 20.0).abs() < 1e-6);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let data: Vec<u64> = (0..200_000).map(|_| law.sample(&mut rng)).collect();
        let mean = data.iter().sum::<u64>() as f64 / data.len() as f64;
        assert!((mean - 20.0).abs() < 0.5, "mean {mean}");
        let kmin = law.min.ceil() as u64 + 1;
        let alpha = fit_power_law_exponent(&data, kmin, 1000);
        assert!((alpha - 2.5).abs() < 0.1, "alpha {alpha}");
    }

    #[test]
    fn impossible_means_are_refused() {
        assert!(PowerLaw::with_mean(2.5, 500.0, 100.0).is_none());
    }
}
