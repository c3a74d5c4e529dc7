//! The SONETOR model's parameters, readable from TOML over one of two presets. Distributions
//! use scipy's parameterisation.
//!
//! - [`Preset::Sonetor`] (the default): SONETOR's example configuration, `examples/example.ini`
//!   of SONETOR's repository (mesarpe/sonetor, and the Twibo group's copy
//!   cs654-twibo/sonetor): `[InterSessionTime] lognorm 2.245, 1.133`, `[InterActivityTime]
//!   lognorm 1.789, 2.366`, `[SessionLength] zipf 1.765, 4.888`, `[SessionsPerUser] zipf
//!   1.792`, the Markov chain of its `orkut.gml` (Retrieve→Retrieve 0.9, Publish→Retrieve 0.9,
//!   starting on Publish), and the copy's `time_limit = 86400`.
//! - [`Preset::Twibo`]: Twibo's Table 2 as printed in its report (distsys-twibo/twibo,
//!   `final_report.pdf`), which gives the inter-session gap the same lognorm(1.789, 2.366)
//!   as the inter-activity gap; and Twibo's load driver (`load-test/test_scripts/v_user.py`),
//!   which asks for 50 posts per retrieve.
//!
//! In both: post sizes are geometric with mean 10,000 (SONETOR's `traffic.py`,
//! `ContentSize(10000, ...)`; SONETOR draws a size per file and picks files by a Zipf, kith
//! draws one per post), then reduced as Twibo's load driver does (`load-test/utils.py`,
//! `norm_act`: while above 400, divide by 5).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// scipy's `lognorm(s, loc, scale)`: `loc + scale * exp(s * N(0, 1))`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogNorm {
    /// Shape: the standard deviation of the underlying normal.
    pub s: f64,
    /// Shift.
    #[serde(default)]
    pub loc: f64,
    /// Scale (default 1).
    #[serde(default = "one")]
    pub scale: f64,
}

/// scipy's `zipf(a, loc)`: `k + loc` where `P(k) = k^-a / zeta(a)`, `k >= 1`. Counts are
/// the integer part of the shifted value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zipf {
    /// Exponent, > 1.
    pub a: f64,
    /// Shift.
    #[serde(default)]
    pub loc: f64,
}

fn one() -> f64 {
    1.0
}

/// The two-state activity chain.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Markov {
    /// P(next = Retrieve | Retrieve).
    pub retrieve_to_retrieve: f64,
    /// P(next = Retrieve | Publish).
    pub publish_to_retrieve: f64,
    /// The first activity of every user publishes (`true`, SONETOR's example) or retrieves.
    pub start_with_publish: bool,
}

/// Post sizes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostSize {
    /// Mean of the geometric distribution (support 1, 2, ...).
    pub mean: f64,
    /// Twibo's reduction: while a size exceeds this, divide it by `reduce_factor`
    /// (0 = no reduction).
    pub reduce_above: u64,
    /// The divisor of the reduction.
    pub reduce_factor: u64,
}

/// Everything the generator draws from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SonetorConfig {
    /// Gap between the end of one session and the start of the next, seconds.
    pub inter_session: LogNorm,
    /// Gap between two activities of a session, seconds.
    pub inter_activity: LogNorm,
    /// Activities per session.
    pub session_length: Zipf,
    /// Sessions per user.
    pub sessions_per_user: Zipf,
    /// Publish/Retrieve chain.
    pub markov: Markov,
    /// Sizes of published posts (the `attr` of a Publish line).
    pub post_size: PostSize,
    /// Posts a Retrieve asks for (the `attr` of a Retrieve line).
    pub retrieve_limit: u64,
    /// Activities at or after this time are dropped, seconds.
    pub time_limit_s: f64,
    /// SONETOR's own behaviour: every session of a user starts one inter-session gap after
    /// time 0 instead of after the user's previous session, so a user's sessions overlap.
    pub compat: bool,
}

/// A named set of defaults (see the module documentation for where each value comes from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Preset {
    /// SONETOR's example configuration.
    #[default]
    Sonetor,
    /// Twibo's Table 2 and load driver.
    Twibo,
}

impl std::str::FromStr for Preset {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Preset, String> {
        match s {
            "sonetor" => Ok(Preset::Sonetor),
            "twibo" => Ok(Preset::Twibo),
            other => Err(format!("unknown preset {other:?}: sonetor or twibo")),
        }
    }
}

impl Default for SonetorConfig {
    fn default() -> Self {
        SonetorConfig::preset(Preset::Sonetor)
    }
}

impl SonetorConfig {
    /// The preset's parameters.
    pub fn preset(preset: Preset) -> SonetorConfig {
        let sonetor = SonetorConfig::sonetor();
        match preset {
            Preset::Sonetor => sonetor,
            Preset::Twibo => SonetorConfig {
                inter_session: LogNorm { s: 1.789, loc: 2.366, scale: 1.0 },
                retrieve_limit: 50,
                ..sonetor
            },
        }
    }

    fn sonetor() -> SonetorConfig {
        SonetorConfig {
            inter_session: LogNorm { s: 2.245, loc: 1.133, scale: 1.0 },
            inter_activity: LogNorm { s: 1.789, loc: 2.366, scale: 1.0 },
            session_length: Zipf { a: 1.765, loc: 4.888 },
            sessions_per_user: Zipf { a: 1.792, loc: 0.0 },
            markov: Markov {
                retrieve_to_retrieve: 0.9,
                publish_to_retrieve: 0.9,
                start_with_publish: true,
            },
            post_size: PostSize { mean: 10_000.0, reduce_above: 400, reduce_factor: 5 },
            retrieve_limit: 20,
            time_limit_s: 86_400.0,
            compat: false,
        }
    }

    /// Reads a TOML file; missing keys take SONETOR's defaults.
    pub fn from_toml(text: &str, origin: &str) -> Result<SonetorConfig> {
        SonetorConfig::from_toml_over(text, origin, Preset::Sonetor)
    }

    /// Reads a TOML file; missing keys (whole tables or single fields) take the preset's.
    pub fn from_toml_over(text: &str, origin: &str, preset: Preset) -> Result<SonetorConfig> {
        let bad = |reason: String| Error::Config { origin: origin.to_string(), reason };
        let given: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let mut merged =
            toml::Table::try_from(SonetorConfig::preset(preset)).map_err(|e| bad(e.to_string()))?;
        merge(&mut merged, given);
        let config: SonetorConfig = merged.try_into().map_err(|e| bad(e.to_string()))?;
        config.check().map_err(|reason| Error::Config { origin: origin.to_string(), reason })?;
        Ok(config)
    }

    /// Checks every parameter's range.
    pub fn check(&self) -> std::result::Result<(), String> {
        let finite = |name: &str, x: f64| {
            if x.is_finite() { Ok(()) } else { Err(format!("{name} must be a finite number")) }
        };
        for (name, d) in
            [("inter_session", self.inter_session), ("inter_activity", self.inter_activity)]
        {
            finite(&format!("{name}.s"), d.s)?;
            finite(&format!("{name}.loc"), d.loc)?;
            finite(&format!("{name}.scale"), d.scale)?;
            if d.s <= 0.0 || d.scale <= 0.0 || d.loc < 0.0 {
                return Err(format!("{name}: need s > 0, scale > 0, loc >= 0"));
            }
        }
        for (name, z) in
            [("session_length", self.session_length), ("sessions_per_user", self.sessions_per_user)]
        {
            finite(&format!("{name}.a"), z.a)?;
            finite(&format!("{name}.loc"), z.loc)?;
            if z.a <= 1.0 || z.loc < 0.0 {
                return Err(format!("{name}: need a > 1 and loc >= 0"));
            }
        }
        for (name, p) in [
            ("markov.retrieve_to_retrieve", self.markov.retrieve_to_retrieve),
            ("markov.publish_to_retrieve", self.markov.publish_to_retrieve),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be a probability, got {p}"));
            }
        }
        if !(self.post_size.mean >= 1.0 && self.post_size.mean.is_finite()) {
            return Err("post_size.mean must be at least 1".into());
        }
        if self.post_size.reduce_above > 0 && self.post_size.reduce_factor < 2 {
            return Err("post_size.reduce_factor must be at least 2".into());
        }
        if !(self.time_limit_s > 0.0 && self.time_limit_s.is_finite()) {
            return Err("time_limit_s must be positive".into());
        }
        Ok(())
    }
}

/// `over` laid over `base`, table by table.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_overrides_single_fields_of_the_preset() {
        let twibo = SonetorConfig::preset(Preset::Twibo);
        assert_eq!(twibo.inter_session, twibo.inter_activity, "Twibo's Table 2 as printed");
        assert_eq!(twibo.retrieve_limit, 50);
        let c = SonetorConfig::from_toml_over("[inter_session]\ns = 3.0\n", "t", Preset::Twibo)
            .unwrap();
        assert_eq!(c.inter_session, LogNorm { s: 3.0, loc: 2.366, scale: 1.0 });
        assert_eq!(c.retrieve_limit, 50);
        let s = SonetorConfig::from_toml("retrieve_limit = 7\n", "t").unwrap();
        assert_eq!(s.inter_session, LogNorm { s: 2.245, loc: 1.133, scale: 1.0 });
        assert_eq!(s.retrieve_limit, 7);
        let err = SonetorConfig::from_toml("[inter_session]\nshape = 1\n", "f.toml").unwrap_err();
        assert!(err.to_string().contains("f.toml") && err.to_string().contains("shape"), "{err}");
        assert_eq!("twibo".parse::<Preset>(), Ok(Preset::Twibo));
        assert!("x".parse::<Preset>().is_err());
    }
}
