//! Read-key distributions: which key index each read of a workload asks for.
//!
//! A read workload runs over the `n` keys `0..n` loaded before it. A
//! [`KeyChooser`] draws the index of each read: with probability `missing` a
//! key that was never loaded (a negative lookup), otherwise a loaded key drawn
//! from a [`Distribution`]:
//!
//! | text form | distribution |
//! |---|---|
//! | `uniform` | every loaded key equally likely (the study's random reads) |
//! | `zipf`, `zipf:THETA` | Zipfian, `P(rank k) ∝ k^-THETA`, `THETA` > 0, default 0.99 (YCSB's constant) |
//! | `hotset`, `hotset:F`, `hotset:F:P` | a fixed hot `F` share of the keys gets a `P` share of the reads (default 1% and 90%, db_bench's `readhot` idea), the rest spread evenly over the other keys |
//!
//! Everything is deterministic per seed and defined exactly below, so that a
//! harness for another engine can replay the same reads.
//!
//! # Generator
//!
//! [`Rng`] is splitmix64: `state := mix64(seed)`; each draw does
//! `state := state + 0x9E37_79B9_7F4A_7C15` (wrapping) and returns
//! `mix64(state)` ([`mix64`]). Derived draws:
//!
//! * `f64()`: `(next >> 11) * 2^-53`, uniform in `[0, 1)`;
//! * `below(m)` (`m > 0`): Lemire's unbiased multiply-shift. `p := next * m`
//!   as a 128-bit product; if `low64(p) < m`, let `t := (2^64 - m) mod m` and
//!   redraw `p := next * m` while `low64(p) < t`; return `high64(p)`.
//!
//! # One read ([`KeyChooser::next`])
//!
//! ```text
//! if missing > 0 and f64() < missing:
//!     return (n + below(min(n, 2^64 - n)), false)     // never loaded: n..2n
//! uniform: i := below(n)
//! zipf:    k := rejection_inversion(n, theta)          // rank 1..=n, 1 the hottest
//!          i := scramble_n(k - 1)
//! hotset:  h := clamp(round(F * n), 1, n)              // hot ranks 0..h; halves round up
//!          r := below(h)          if h == n or f64() < P
//!               h + below(n - h)  otherwise
//!          i := scramble_n(r)
//! return (i, true)
//! ```
//!
//! `rejection_inversion` is the method of W. Hörmann and G. Derflinger,
//! "Rejection-inversion to generate variates from monotone discrete
//! distributions" (ACM TOMACS 6(3), 1996), for `h(x) = x^-theta` on `1..=n`:
//! O(1) setup, no zeta sum over `n` (unlike YCSB's method of Gray et al., whose
//! setup is O(n)), and O(1) expected work per draw (few rejections), for any
//! `theta > 0` including 1. With `H(x) = (x^(1-theta) - 1) / (1 - theta)` (`ln x`
//! when `theta = 1`) and its inverse `H⁻¹`:
//!
//! ```text
//! setup:  a := H(1.5) - 1;  b := H(n + 0.5);  c := 2 - H⁻¹(H(2.5) - h(2))
//! draw:   loop { u := b + f64() * (a - b);  x := H⁻¹(u)
//!                k := clamp(floor(x + 0.5), 1, n)
//!                if k - x <= c or u >= H(k + 0.5) - h(k): return k }
//! ```
//!
//! (`h(x)` is evaluated as `exp(-theta ln x)`, `H` and `H⁻¹` as
//! `ln x * expm1(t)/t` with `t = (1 - theta) ln x`, and `exp(y * log1p(t)/t)`
//! with `t = (1 - theta) y`, with the series `1 + t/2 + t²/6` and
//! `1 - t/2 + t²/3` when `|t| < 1e-8`.)
//!
//! # Scramble
//!
//! Popularity ranks are spread over the key indices by [`Scramble`], a
//! pseudo-random *bijection* on `0..n` (so no two ranks share an index and the
//! hot keys are not the first ones, nor neighbours in a `path`-scheme key
//! order). It is a 4-round Feistel network on the `b` bits of `0..2^b`, `b` the
//! smallest `b >= 2` with `2^b >= n`, split into a high half `L` of `b - b/2`
//! bits and a low half `R` of `b/2` bits that the rounds update in turn, walked
//! in cycles until the value falls in `0..n` (fewer than 2 evaluations of the
//! network on average since `2^b < 2n` when `n > 2`):
//!
//! ```text
//! round keys: K_j := mix64(n + (j + 1) * 0x9E37_79B9_7F4A_7C15), j = 0..4 (wrapping)
//! E(v):  L := v >> (b/2);  R := v & (2^(b/2) - 1)
//!        for j in 0, 1, 2, 3:
//!            j even: L := L XOR (mix64(R XOR K_j) & (2^(b - b/2) - 1))
//!            j odd:  R := R XOR (mix64(L XOR K_j) & (2^(b/2) - 1))
//!        return (L << (b/2)) | R
//! scramble_n(r): v := E(r); while v >= n: v := E(v); return v
//! ```
//!
//! (The inverse runs the same rounds for j = 3, 2, 1, 0.)
//!
//! The scramble and the hot set depend only on `n`, not on the seed: every
//! reader thread and every seed agrees on which keys are hot, and the seed only
//! drives the draws.
//!
//! # Threads
//!
//! A [`KeyChooser`] is a plain value (`Send`, not shared): each reader thread
//! owns one. Thread `t` of a run with seed `s` uses seed `s + t` (wrapping),
//! which [`KeyChooser::for_thread`] builds without repeating the setup.

use std::fmt;
use std::str::FromStr;

use crate::{mix64, GAMMA};

/// Zipf exponent when `zipf` has none (YCSB's `ZIPFIAN_CONSTANT`).
pub const DEFAULT_ZIPF_THETA: f64 = 0.99;

/// Share of the keys that are hot when `hotset` has no parameters.
pub const DEFAULT_HOT_FRACTION: f64 = 0.01;

/// Share of the reads that go to the hot keys when `hotset` does not say.
pub const DEFAULT_HOT_PROBABILITY: f64 = 0.9;

/// A distribution of reads over the loaded keys; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Distribution {
    /// Every loaded key equally likely.
    #[default]
    Uniform,
    /// `P(rank k) ∝ k^-theta` over ranks `1..=n`, ranks scrambled over indices.
    Zipf {
        /// The skew (0.99 in YCSB).
        theta: f64,
    },
    /// A fixed pseudo-random `hot_fraction` of the keys receives
    /// `hot_probability` of the reads; the others share the rest evenly.
    HotSet {
        /// Share of the keys that are hot (0..1).
        hot_fraction: f64,
        /// Share of the reads that go to the hot keys (0..1).
        hot_probability: f64,
    },
}

impl Distribution {
    /// Zipf with the default exponent 0.99.
    pub fn zipf() -> Distribution {
        Distribution::Zipf {
            theta: DEFAULT_ZIPF_THETA,
        }
    }

    /// The hot set with the defaults: 1% of the keys get 90% of the reads.
    pub fn hotset() -> Distribution {
        Distribution::HotSet {
            hot_fraction: DEFAULT_HOT_FRACTION,
            hot_probability: DEFAULT_HOT_PROBABILITY,
        }
    }

    /// The distribution's name: `"uniform"`, `"zipf"` or `"hotset"`.
    pub fn name(&self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipf { .. } => "zipf",
            Distribution::HotSet { .. } => "hotset",
        }
    }

    /// Checks the parameters: `theta` finite and positive, `hot_fraction` in
    /// `(0, 1]`, `hot_probability` in `[0, 1]`.
    pub fn validate(&self) -> Result<(), DistError> {
        match *self {
            Distribution::Uniform => Ok(()),
            Distribution::Zipf { theta } => {
                check(theta, theta.is_finite() && theta > 0.0, "zipf theta", "> 0")
            }
            Distribution::HotSet {
                hot_fraction,
                hot_probability,
            } => {
                check(
                    hot_fraction,
                    hot_fraction > 0.0 && hot_fraction <= 1.0,
                    "hot fraction",
                    "in (0, 1]",
                )?;
                check(
                    hot_probability,
                    (0.0..=1.0).contains(&hot_probability),
                    "hot probability",
                    "in [0, 1]",
                )
            }
        }
    }
}

fn check(
    value: f64,
    ok: bool,
    what: &'static str,
    expected: &'static str,
) -> Result<(), DistError> {
    if ok {
        Ok(())
    } else {
        Err(DistError::InvalidParameter {
            what,
            value,
            expected,
        })
    }
}

impl fmt::Display for Distribution {
    /// The text form, which [`FromStr`] parses back to the same value:
    /// `uniform`, `zipf:THETA`, `hotset:F:P` (parameters always written out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Uniform => f.write_str("uniform"),
            Distribution::Zipf { theta } => write!(f, "zipf:{theta}"),
            Distribution::HotSet {
                hot_fraction,
                hot_probability,
            } => write!(f, "hotset:{hot_fraction}:{hot_probability}"),
        }
    }
}

impl FromStr for Distribution {
    type Err = DistError;

    /// `uniform`, `zipf`, `zipf:THETA`, `hotset`, `hotset:F`, `hotset:F:P`
    /// (names ASCII case-insensitive, spaces around the parts ignored); the
    /// parameters are validated as by [`Distribution::validate`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parse_error = |reason: String| DistError::Parse {
            input: s.to_string(),
            reason,
        };
        let mut parts = s.split(':').map(str::trim);
        let name = parts.next().unwrap_or_default().to_ascii_lowercase();
        let params = parts
            .map(|p| {
                p.parse::<f64>()
                    .map_err(|_| parse_error(format!("{p:?} is not a number")))
            })
            .collect::<Result<Vec<f64>, DistError>>()?;
        let dist = match (name.as_str(), params.as_slice()) {
            ("uniform", []) => Distribution::Uniform,
            ("zipf", []) => Distribution::zipf(),
            ("zipf", &[theta]) => Distribution::Zipf { theta },
            ("hotset", []) => Distribution::hotset(),
            ("hotset", &[hot_fraction]) => Distribution::HotSet {
                hot_fraction,
                hot_probability: DEFAULT_HOT_PROBABILITY,
            },
            ("hotset", &[hot_fraction, hot_probability]) => Distribution::HotSet {
                hot_fraction,
                hot_probability,
            },
            ("uniform" | "zipf" | "hotset", _) => {
                return Err(parse_error(format!(
                    "too many parameters for {name} (expected uniform, zipf[:THETA] \
                     or hotset[:FRACTION[:PROBABILITY]])"
                )))
            }
            _ => {
                return Err(parse_error(
                    "unknown distribution (expected uniform, zipf[:THETA] or \
                     hotset[:FRACTION[:PROBABILITY]])"
                        .to_string(),
                ))
            }
        };
        dist.validate()?;
        Ok(dist)
    }
}

/// An invalid distribution text, parameter or key chooser.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DistError {
    /// The text names no distribution or has a malformed parameter.
    Parse {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A parameter outside its range.
    InvalidParameter {
        /// The parameter.
        what: &'static str,
        /// The value given.
        value: f64,
        /// The range it must be in.
        expected: &'static str,
    },
    /// A key chooser over no keys (`n == 0`).
    NoKeys,
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Parse { input, reason } => {
                write!(f, "invalid distribution {input:?}: {reason}")
            }
            DistError::InvalidParameter {
                what,
                value,
                expected,
            } => write!(f, "{what} is {value}, expected {expected}"),
            DistError::NoKeys => f.write_str("no loaded keys to read (n = 0)"),
        }
    }
}

impl std::error::Error for DistError {}

/// splitmix64, the workloads' small deterministic generator; see the module
/// documentation for the exact definition of every draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// The generator for `seed` (`state := mix64(seed)`).
    pub fn new(seed: u64) -> Rng {
        Rng { state: mix64(seed) }
    }

    /// The next 64 uniform bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..m`, unbiased; `below(0)` returns 0 without drawing.
    pub fn below(&mut self, m: u64) -> u64 {
        if m == 0 {
            return 0;
        }
        let mut p = u128::from(self.next_u64()) * u128::from(m);
        if (p as u64) < m {
            let threshold = m.wrapping_neg() % m;
            while (p as u64) < threshold {
                p = u128::from(self.next_u64()) * u128::from(m);
            }
        }
        (p >> 64) as u64
    }
}

/// Feistel rounds of [`Scramble`].
const SCRAMBLE_ROUNDS: usize = 4;

/// A pseudo-random bijection on `0..n` that depends only on `n`; see the
/// module documentation. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scramble {
    n: u64,
    /// `b/2`: the bits of the low half `R`.
    low_bits: u32,
    /// `2^(b - b/2) - 1`
    high_mask: u64,
    /// `2^(b/2) - 1`
    low_mask: u64,
    keys: [u64; SCRAMBLE_ROUNDS],
}

impl Scramble {
    /// The permutation of `0..n`.
    pub fn new(n: u64) -> Scramble {
        // The bits to write n - 1, at least 2 so that both halves have one.
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        let low_bits = bits / 2;
        let mut keys = [0u64; SCRAMBLE_ROUNDS];
        for (j, key) in keys.iter_mut().enumerate() {
            *key = mix64(n.wrapping_add((j as u64 + 1).wrapping_mul(GAMMA)));
        }
        Scramble {
            n,
            low_bits,
            high_mask: (1u64 << (bits - low_bits)) - 1,
            low_mask: (1u64 << low_bits) - 1,
            keys,
        }
    }

    /// The size of the permuted range.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The image of `r` (`r < n`; a larger `r` is first reduced modulo `n`).
    /// Returns 0 when `n == 0`.
    pub fn apply(&self, r: u64) -> u64 {
        self.walk(r, false)
    }

    /// The inverse: `invert(apply(r)) == r` for every `r < n`.
    pub fn invert(&self, i: u64) -> u64 {
        self.walk(i, true)
    }

    fn walk(&self, v: u64, inverse: bool) -> u64 {
        if self.n == 0 {
            return 0;
        }
        // Cycle walking only terminates from a start inside 0..n.
        let mut v = if v < self.n { v } else { v % self.n };
        loop {
            v = self.network(v, inverse);
            if v < self.n {
                return v;
            }
        }
    }

    /// One evaluation of the network on `0..2^b`, or of its inverse.
    fn network(&self, v: u64, inverse: bool) -> u64 {
        let (mut high, mut low) = (v >> self.low_bits, v & self.low_mask);
        let mut round = |j: usize| {
            if j.is_multiple_of(2) {
                high ^= mix64(low ^ self.keys[j]) & self.high_mask;
            } else {
                low ^= mix64(high ^ self.keys[j]) & self.low_mask;
            }
        };
        if inverse {
            (0..SCRAMBLE_ROUNDS).rev().for_each(&mut round);
        } else {
            (0..SCRAMBLE_ROUNDS).for_each(&mut round);
        }
        (high << self.low_bits) | low
    }
}

/// Zipf ranks `1..=n` by rejection-inversion (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
struct ZipfSampler {
    n: u64,
    theta: f64,
    /// `H(1.5) - 1`
    h_integral_x1: f64,
    /// `H(n + 0.5)`
    h_integral_n: f64,
    /// `2 - H⁻¹(H(2.5) - h(2))`
    squeeze: f64,
}

impl ZipfSampler {
    fn new(n: u64, theta: f64) -> ZipfSampler {
        let mut z = ZipfSampler {
            n,
            theta,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            squeeze: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.squeeze = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// `h(x) = x^-theta`
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// `H(x) = (x^(1-theta) - 1) / (1 - theta)`, `ln x` for `theta = 1`.
    fn h_integral(&self, x: f64) -> f64 {
        let ln_x = x.ln();
        expm1_over_x((1.0 - self.theta) * ln_x) * ln_x
    }

    /// The inverse of `H`.
    fn h_integral_inverse(&self, y: f64) -> f64 {
        // t > -1 for every y in [H(1.5) - 1, H(n + 0.5)]; a NaN from rounding
        // at the edge is rejected or clamped to rank 1 by `sample`.
        (log1p_over_x((1.0 - self.theta) * y) * y).exp()
    }

    /// A rank in `1..=n`, 1 the most likely.
    fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            // `as` saturates (NaN becomes 0); the clamp keeps k in 1..=n.
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.squeeze || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }
}

/// `expm1(x) / x`, 1 at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * (0.5 + x / 6.0)
    }
}

/// `log1p(x) / x`, 1 at 0.
fn log1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Sampler {
    Uniform,
    Zipf {
        zipf: ZipfSampler,
        scramble: Scramble,
    },
    HotSet {
        hot: u64,
        hot_probability: f64,
        scramble: Scramble,
    },
}

/// Seed of the measured reads of a bench run: thread `t` draws with
/// `MEASURE_SEED + t` ([`KeyChooser::for_thread`]).
pub const MEASURE_SEED: u64 = 2;

/// Seed of a bench run's warm-up reads, far from [`MEASURE_SEED`] so that no
/// warm-up thread's stream is a measured thread's (with seeds 1 and 2, the
/// warm-up's thread 1 drew exactly the keys the measurement's thread 0 read
/// first, which a cache large enough for them turned into data-block hits).
pub const WARMUP_SEED: u64 = 1 << 32;

/// Draws the key indices of one reader's reads; see the module documentation.
///
/// Owned by one thread (it is `Send` and `Clone`); give every thread its own,
/// e.g. with [`KeyChooser::for_thread`].
#[derive(Clone, Debug, PartialEq)]
pub struct KeyChooser {
    distribution: Distribution,
    n: u64,
    missing: f64,
    /// How many never-loaded indices (from `n` on) missing reads spread over.
    missing_span: u64,
    seed: u64,
    rng: Rng,
    sampler: Sampler,
}

impl KeyChooser {
    /// A chooser over the `n` loaded keys `0..n` that makes a `missing` share
    /// of its reads negative (indices in `n..2n`, or up to `u64::MAX` when
    /// `2n` overflows). Errors: `n == 0`, `missing` outside `[0, 1]`, or an
    /// invalid distribution parameter.
    pub fn new(
        distribution: Distribution,
        n: u64,
        missing: f64,
        seed: u64,
    ) -> Result<KeyChooser, DistError> {
        distribution.validate()?;
        check(
            missing,
            (0.0..=1.0).contains(&missing),
            "missing share",
            "in [0, 1]",
        )?;
        if n == 0 {
            return Err(DistError::NoKeys);
        }
        let sampler = match distribution {
            Distribution::Uniform => Sampler::Uniform,
            Distribution::Zipf { theta } => Sampler::Zipf {
                zipf: ZipfSampler::new(n, theta),
                scramble: Scramble::new(n),
            },
            Distribution::HotSet {
                hot_fraction,
                hot_probability,
            } => Sampler::HotSet {
                hot: ((hot_fraction * n as f64).round() as u64).clamp(1, n),
                hot_probability,
                scramble: Scramble::new(n),
            },
        };
        Ok(KeyChooser {
            distribution,
            n,
            missing,
            // The count of indices n..=u64::MAX is 2^64 - n, at least 1.
            missing_span: n.min(u64::MAX - n + 1),
            seed,
            rng: Rng::new(seed),
            sampler,
        })
    }

    /// The chooser of reader thread `thread`: the same as
    /// `KeyChooser::new(distribution, n, missing, seed + thread)` (wrapping),
    /// at the start of its stream, without repeating the setup.
    pub fn for_thread(&self, thread: u64) -> KeyChooser {
        let seed = self.seed.wrapping_add(thread);
        KeyChooser {
            seed,
            rng: Rng::new(seed),
            ..self.clone()
        }
    }

    /// The next read: `(index, true)` with `index < n` for a loaded key, or
    /// `(index, false)` with `index >= n` for a key that was never loaded.
    // Not `Iterator::next`: the stream never ends, so an `Option` would only add
    // an unwrap at every call site.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> (u64, bool) {
        let n = self.n;
        let rng = &mut self.rng;
        if self.missing > 0.0 && rng.next_f64() < self.missing {
            return (n + rng.below(self.missing_span), false);
        }
        let index = match &self.sampler {
            Sampler::Uniform => rng.below(n),
            Sampler::Zipf { zipf, scramble } => scramble.apply(zipf.sample(rng) - 1),
            Sampler::HotSet {
                hot,
                hot_probability,
                scramble,
            } => {
                let rank = if *hot == n || rng.next_f64() < *hot_probability {
                    rng.below(*hot)
                } else {
                    hot + rng.below(n - hot)
                };
                scramble.apply(rank)
            }
        };
        (index, true)
    }

    /// The distribution this chooser draws from.
    pub fn distribution(&self) -> Distribution {
        self.distribution
    }

    /// The number of loaded keys.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The share of negative reads.
    pub fn missing(&self) -> f64 {
        self.missing
    }

    /// The seed this chooser's stream started from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// For `hotset`, the number of hot keys (the ranks `0..hot_count`).
    pub fn hot_count(&self) -> Option<u64> {
        match self.sampler {
            Sampler::HotSet { hot, .. } => Some(hot),
            _ => None,
        }
    }

    /// The popularity rank of loaded index `index` (0 the most read; for
    /// `hotset` the ranks below [`hot_count`](Self::hot_count) are the hot
    /// keys). `None` for `uniform` and for `index >= n`.
    pub fn rank_of(&self, index: u64) -> Option<u64> {
        match &self.sampler {
            Sampler::Zipf { scramble, .. } | Sampler::HotSet { scramble, .. } if index < self.n => {
                Some(scramble.invert(index))
            }
            _ => None,
        }
    }

    /// The loaded index of popularity rank `rank` (the inverse of
    /// [`rank_of`](Self::rank_of)). `None` for `uniform` and for `rank >= n`.
    pub fn index_at_rank(&self, rank: u64) -> Option<u64> {
        match &self.sampler {
            Sampler::Zipf { scramble, .. } | Sampler::HotSet { scramble, .. } if rank < self.n => {
                Some(scramble.apply(rank))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chooser(d: Distribution, n: u64, missing: f64, seed: u64) -> KeyChooser {
        KeyChooser::new(d, n, missing, seed).expect("valid chooser")
    }

    /// Read counts per loaded index over `draws` reads (all must be present).
    fn histogram(c: &mut KeyChooser, draws: usize) -> Vec<u64> {
        let mut counts = vec![0u64; c.n() as usize];
        for _ in 0..draws {
            let (i, present) = c.next();
            assert!(present && i < c.n());
            counts[i as usize] += 1;
        }
        counts
    }

    #[test]
    fn parse_defaults_and_parameters() {
        let p = |s: &str| s.parse::<Distribution>();
        assert_eq!(p("uniform"), Ok(Distribution::Uniform));
        assert_eq!(p(" Uniform "), Ok(Distribution::Uniform));
        assert_eq!(p("zipf"), Ok(Distribution::Zipf { theta: 0.99 }));
        assert_eq!(p("zipf:0.8"), Ok(Distribution::Zipf { theta: 0.8 }));
        assert_eq!(p("ZIPF: 1.2"), Ok(Distribution::Zipf { theta: 1.2 }));
        assert_eq!(
            p("hotset"),
            Ok(Distribution::HotSet {
                hot_fraction: 0.01,
                hot_probability: 0.9
            })
        );
        assert_eq!(
            p("hotset:0.05"),
            Ok(Distribution::HotSet {
                hot_fraction: 0.05,
                hot_probability: 0.9
            })
        );
        assert_eq!(
            p("hotset:0.2:0.8"),
            Ok(Distribution::HotSet {
                hot_fraction: 0.2,
                hot_probability: 0.8
            })
        );
        assert_eq!(Distribution::default(), Distribution::Uniform);
    }

    #[test]
    fn parse_rejects_bad_input() {
        for bad in [
            "",
            "normal",
            "uniform:1",
            "zipf:",
            "zipf:x",
            "zipf:0",
            "zipf:-1",
            "zipf:nan",
            "zipf:inf",
            "zipf:1:2",
            "hotset:0",
            "hotset:1.5",
            "hotset:0.1:1.1",
            "hotset:0.1:-0.1",
            "hotset:0.1:0.9:3",
        ] {
            let err = bad.parse::<Distribution>().expect_err(bad);
            assert!(!err.to_string().is_empty());
        }
        assert!(matches!(
            "zipf:0".parse::<Distribution>(),
            Err(DistError::InvalidParameter {
                what: "zipf theta",
                ..
            })
        ));
        assert!(matches!(
            "zipf:x".parse::<Distribution>(),
            Err(DistError::Parse { .. })
        ));
    }

    #[test]
    fn display_round_trips() {
        for d in [
            Distribution::Uniform,
            Distribution::zipf(),
            Distribution::Zipf { theta: 0.8 },
            Distribution::Zipf { theta: 1.0 },
            Distribution::Zipf { theta: 1e-7 },
            Distribution::hotset(),
            Distribution::HotSet {
                hot_fraction: 1.0 / 3.0,
                hot_probability: 0.0,
            },
        ] {
            let text = d.to_string();
            assert_eq!(text.parse::<Distribution>(), Ok(d), "{text}");
        }
        assert_eq!(Distribution::zipf().to_string(), "zipf:0.99");
        assert_eq!(Distribution::hotset().to_string(), "hotset:0.01:0.9");
        assert_eq!(Distribution::Uniform.to_string(), "uniform");
    }

    #[test]
    fn chooser_rejects_bad_parameters() {
        let u = Distribution::Uniform;
        assert_eq!(KeyChooser::new(u, 0, 0.0, 1), Err(DistError::NoKeys));
        assert!(KeyChooser::new(u, 10, -0.1, 1).is_err());
        assert!(KeyChooser::new(u, 10, 1.1, 1).is_err());
        assert!(KeyChooser::new(u, 10, f64::NAN, 1).is_err());
        assert!(KeyChooser::new(Distribution::Zipf { theta: 0.0 }, 10, 0.0, 1).is_err());
    }

    #[test]
    fn rng_is_splitmix64() {
        // Seed 0 starts the reference splitmix64 stream (see `mix64_golden`).
        let mut rng = Rng::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut rng = Rng::new(7);
        for _ in 0..10_000 {
            let f = rng.next_f64();
            assert!((0.0..1.0).contains(&f));
            assert!(rng.below(3) < 3);
            assert_eq!(rng.below(1), 0);
        }
        assert_eq!(rng.below(0), 0);
    }

    #[test]
    fn below_is_unbiased_for_awkward_ranges() {
        // m = 3 * 2^62 rejects a quarter of the draws; the top third of the
        // range must still get a third of the results.
        let mut rng = Rng::new(11);
        let m = 3u64 << 62;
        let draws = 120_000;
        let top = (0..draws).filter(|_| rng.below(m) >= 2u64 << 62).count();
        let share = top as f64 / draws as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.01, "{share}");
        let mut counts = [0u32; 3];
        for _ in 0..300_000 {
            counts[rng.below(3) as usize] += 1;
        }
        for c in counts {
            assert!((c as f64 / 100_000.0 - 1.0).abs() < 0.02, "{counts:?}");
        }
    }

    #[test]
    fn scramble_is_a_bijection() {
        for n in [1u64, 2, 3, 4, 5, 15, 16, 17, 100, 1000, 4096, 4097, 10_007] {
            let s = Scramble::new(n);
            let mut seen = vec![false; n as usize];
            for r in 0..n {
                let i = s.apply(r);
                assert!(i < n, "n={n} r={r} i={i}");
                assert!(!seen[i as usize], "n={n}: {i} hit twice");
                seen[i as usize] = true;
                assert_eq!(s.invert(i), r);
            }
            // Out-of-range input is reduced, never loops.
            assert_eq!(s.apply(n + 1), s.apply(1 % n));
        }
        // Huge ranges work and stay in range.
        for n in [u64::MAX, u64::MAX / 3, 1 << 63] {
            let s = Scramble::new(n);
            for r in [0, 1, 12_345, n - 1] {
                let i = s.apply(r);
                assert!(i < n);
                assert_eq!(s.invert(i), r);
            }
        }
        assert_eq!(Scramble::new(0).apply(5), 0);
        // Depends on n only, and is not the identity.
        assert_eq!(Scramble::new(1000), Scramble::new(1000));
        assert!((0..1000).any(|r| Scramble::new(1000).apply(r) != r));
    }

    #[test]
    fn chooser_is_deterministic_per_seed() {
        for d in [
            Distribution::Uniform,
            Distribution::zipf(),
            Distribution::hotset(),
        ] {
            let draws = |c: &mut KeyChooser| (0..1000).map(|_| c.next()).collect::<Vec<_>>();
            let base = chooser(d, 50_000, 0.1, 42);
            let a = draws(&mut base.clone());
            assert_eq!(a, draws(&mut chooser(d, 50_000, 0.1, 42)), "{d}");
            assert_ne!(a, draws(&mut chooser(d, 50_000, 0.1, 43)), "{d}");
            // Thread t uses seed + t, and the shared setup is unchanged.
            let t3 = base.for_thread(3);
            assert_eq!(t3, chooser(d, 50_000, 0.1, 45));
            assert_eq!(t3.seed(), 45);
            assert_eq!(base.for_thread(0), base);
        }
    }

    #[test]
    fn warm_up_and_measured_streams_never_share_a_seed() {
        for t in 0..4096u64 {
            for u in 0..4096u64 {
                assert_ne!(WARMUP_SEED.wrapping_add(t), MEASURE_SEED.wrapping_add(u));
            }
        }
        let warm = chooser(Distribution::Uniform, 1 << 40, 0.0, WARMUP_SEED).for_thread(1);
        let measured = chooser(Distribution::Uniform, 1 << 40, 0.0, MEASURE_SEED).for_thread(0);
        let (mut w, mut m) = (warm, measured);
        let first: std::collections::HashSet<u64> = (0..1000).map(|_| w.next().0).collect();
        assert!((0..1000).all(|_| !first.contains(&m.next().0)));
    }

    #[test]
    fn missing_share_and_ranges() {
        let n = 1_000_000;
        for d in [
            Distribution::Uniform,
            Distribution::zipf(),
            Distribution::hotset(),
        ] {
            let mut c = chooser(d, n, 0.1, 5);
            let draws = 200_000;
            let mut missing = 0;
            for _ in 0..draws {
                let (i, present) = c.next();
                if present {
                    assert!(i < n);
                } else {
                    assert!((n..2 * n).contains(&i));
                    missing += 1;
                }
            }
            let share = missing as f64 / draws as f64;
            assert!((share - 0.1).abs() < 0.01, "{d}: {share}");
        }
        // No missing reads when missing is 0; only missing reads when it is 1.
        let mut none = chooser(Distribution::Uniform, 10, 0.0, 1);
        assert!((0..10_000).all(|_| none.next().1));
        let mut all = chooser(Distribution::zipf(), 10, 1.0, 1);
        assert!((0..10_000).all(|_| {
            let (i, present) = all.next();
            !present && (10..20).contains(&i)
        }));
        // Missing indices stay representable next to the top of u64.
        let mut top = chooser(Distribution::Uniform, u64::MAX, 1.0, 1);
        assert_eq!(top.next(), (u64::MAX, false));
    }

    #[test]
    fn uniform_is_flat() {
        let n = 1000u64;
        let draws = 200_000;
        let counts = histogram(&mut chooser(Distribution::Uniform, n, 0.0, 9), draws);
        let expected = draws as f64 / n as f64;
        let chi2: f64 = counts
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        // 999 degrees of freedom: mean 999, standard deviation about 45.
        assert!(chi2 < 1300.0, "chi-square {chi2}");
        assert!(counts.iter().all(|&c| c > 0));
    }

    /// Exact Zipf probabilities of ranks 1..=n.
    fn zipf_pmf(n: u64, theta: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-theta)).collect();
        let total: f64 = weights.iter().sum();
        weights.into_iter().map(|w| w / total).collect()
    }

    #[test]
    fn zipf_099_is_skewed_and_scrambled() {
        let n = 10_000u64;
        let draws = 200_000;
        let mut c = chooser(Distribution::zipf(), n, 0.0, 1);
        let counts = histogram(&mut c, draws);
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top = sorted[0] as f64 / draws as f64;
        let top1pct: u64 = sorted[..(n / 100) as usize].iter().sum();
        let top1pct = top1pct as f64 / draws as f64;
        // Exact: rank 1 has 9.6%, the top 100 ranks 51%.
        assert!(top > 0.05, "most frequent index gets {top}");
        assert!(top1pct > 0.4, "top 1% of indices get {top1pct}");
        // The most frequent index is the scramble of rank 0.
        let hottest = (0..n).max_by_key(|&i| counts[i as usize]);
        assert_eq!(hottest, c.index_at_rank(0));
        // The hottest 100 ranks are spread over the indices.
        let hot: Vec<u64> = (0..100).filter_map(|r| c.index_at_rank(r)).collect();
        let buckets: std::collections::HashSet<u64> = hot.iter().map(|i| i / 100).collect();
        assert!(buckets.len() > 40, "{} buckets", buckets.len());
        let span = hot.iter().max().copied().unwrap_or(0) - hot.iter().min().copied().unwrap_or(0);
        assert!(span > n / 2, "span {span}");
    }

    #[test]
    fn zipf_matches_the_exact_distribution() {
        let n = 1000u64;
        let draws = 200_000;
        for theta in [0.2, 0.5, 0.99, 1.0, 1.5, 3.0] {
            let mut c = chooser(Distribution::Zipf { theta }, n, 0.0, 3);
            let counts = histogram(&mut c, draws);
            let pmf = zipf_pmf(n, theta);
            let mut cumulative_expected = 0.0;
            let mut cumulative_seen = 0.0;
            for rank in 0..n {
                let index = c.index_at_rank(rank).expect("rank < n");
                assert_eq!(c.rank_of(index), Some(rank));
                let seen = counts[index as usize] as f64 / draws as f64;
                let expected = pmf[rank as usize];
                if rank < 5 {
                    // Standard deviation at most 0.0012 for 200k draws.
                    assert!(
                        (seen - expected).abs() < 0.006,
                        "theta {theta} rank {rank}: {seen} vs {expected}"
                    );
                }
                cumulative_expected += expected;
                cumulative_seen += seen;
                if [9, 99, 499].contains(&rank) {
                    assert!(
                        (cumulative_seen - cumulative_expected).abs() < 0.008,
                        "theta {theta} top {}: {cumulative_seen} vs {cumulative_expected}",
                        rank + 1
                    );
                }
            }
        }
    }

    #[test]
    fn zipf_tiny_and_huge_ranges() {
        let mut one = chooser(Distribution::zipf(), 1, 0.0, 1);
        assert!((0..1000).all(|_| one.next() == (0, true)));
        let mut two = chooser(Distribution::Zipf { theta: 1.0 }, 2, 0.0, 1);
        let hot = two.index_at_rank(0).expect("rank 0");
        let hits = (0..30_000).filter(|_| two.next().0 == hot).count();
        // P(rank 1) = 1 / (1 + 1/2) = 2/3.
        assert!((hits as f64 / 30_000.0 - 2.0 / 3.0).abs() < 0.02, "{hits}");
        // Twenty billion keys (the study's largest dataset): O(1) setup.
        let n = 20_000_000_000u64;
        let mut big = chooser(Distribution::zipf(), n, 0.0, 1);
        let hottest = big.index_at_rank(0).expect("rank 0");
        let mut hottest_hits = 0;
        for _ in 0..20_000 {
            let (i, present) = big.next();
            assert!(present && i < n);
            hottest_hits += usize::from(i == hottest);
        }
        // Rank 1 has about 4% at this size.
        assert!(hottest_hits > 400, "{hottest_hits}");
    }

    #[test]
    fn hotset_sends_the_hot_share_to_the_hot_keys() {
        let n = 10_000u64;
        let draws = 200_000;
        let mut c = chooser(Distribution::hotset(), n, 0.0, 2);
        assert_eq!(c.hot_count(), Some(100));
        let counts = histogram(&mut c, draws);
        let is_hot = |i: u64| c.rank_of(i).is_some_and(|r| r < 100);
        let hot_reads: u64 = (0..n)
            .filter(|&i| is_hot(i))
            .map(|i| counts[i as usize])
            .sum();
        let share = hot_reads as f64 / draws as f64;
        assert!((share - 0.9).abs() < 0.02, "hot share {share}");
        // Every hot key is read, evenly (about 1800 reads each).
        for i in (0..n).filter(|&i| is_hot(i)) {
            assert!(
                (1500..2100).contains(&counts[i as usize]),
                "{i}: {}",
                counts[i as usize]
            );
        }
        // The hot set is the same for every seed, i.e. for every thread.
        let other = chooser(Distribution::hotset(), n, 0.0, 99);
        assert!((0..100).all(|r| other.index_at_rank(r) == c.index_at_rank(r)));
        // A hot set of every key is uniform; a tiny fraction still has one key.
        let all = chooser(
            Distribution::HotSet {
                hot_fraction: 1.0,
                hot_probability: 0.5,
            },
            n,
            0.0,
            1,
        );
        assert_eq!(all.hot_count(), Some(n));
        let tiny = chooser(
            Distribution::HotSet {
                hot_fraction: 1e-9,
                hot_probability: 0.9,
            },
            n,
            0.0,
            1,
        );
        assert_eq!(tiny.hot_count(), Some(1));
    }

    /// Pins every draw's definition, so that a change is noticed and other
    /// engines' harnesses can replay the reads. Computed by an independent Python
    /// transcription of the module documentation (n = 10^6, 25% missing, seed 7).
    #[test]
    fn chooser_golden() {
        let golden: [(Distribution, &[(u64, bool)]); 4] = [
            (
                Distribution::Uniform,
                &[
                    (302139, true),
                    (883229, true),
                    (344606, true),
                    (604697, true),
                    (87479, true),
                    (170180, true),
                    (573012, true),
                    (801459, true),
                    (987315, true),
                    (11371, true),
                    (759795, true),
                    (982040, true),
                    (934731, true),
                    (270985, true),
                    (364430, true),
                    (256297, true),
                    (1927827, false),
                    (257285, true),
                    (164260, true),
                    (1331727, false),
                    (420312, true),
                    (481130, true),
                    (436365, true),
                    (1676334, false),
                ],
            ),
            (
                Distribution::zipf(),
                &[
                    (266932, true),
                    (844209, true),
                    (844006, true),
                    (496320, true),
                    (70833, true),
                    (439786, true),
                    (134726, true),
                    (810300, true),
                    (716363, true),
                    (326296, true),
                    (737227, true),
                    (716363, true),
                    (655337, true),
                    (474288, true),
                    (247358, true),
                    (862609, true),
                    (688939, true),
                    (817537, true),
                    (1146469, false),
                    (465235, true),
                    (494396, true),
                    (718597, true),
                    (548379, true),
                    (896003, true),
                ],
            ),
            (
                Distribution::Zipf { theta: 1.0 },
                &[
                    (552187, true),
                    (844209, true),
                    (725200, true),
                    (611327, true),
                    (956311, true),
                    (959716, true),
                    (122027, true),
                    (661303, true),
                    (716363, true),
                    (339609, true),
                    (130657, true),
                    (716363, true),
                    (716363, true),
                    (112652, true),
                    (984387, true),
                    (825574, true),
                    (1927827, false),
                    (363354, true),
                    (528708, true),
                    (1331727, false),
                    (205911, true),
                    (19187, true),
                    (353683, true),
                    (1676334, false),
                ],
            ),
            (
                Distribution::hotset(),
                &[
                    (59785, true),
                    (11138, true),
                    (933300, true),
                    (1912412, false),
                    (1994041, false),
                    (910635, true),
                    (536003, true),
                    (1535162, false),
                    (920672, true),
                    (525487, true),
                    (398048, true),
                    (894077, true),
                    (147918, true),
                    (68287, true),
                    (751184, true),
                    (404824, true),
                    (755815, true),
                    (41677, true),
                    (435428, true),
                    (1872586, false),
                    (1603073, false),
                    (397848, true),
                    (85071, true),
                    (1884650, false),
                ],
            ),
        ];
        for (d, expected) in golden {
            let mut c = chooser(d, 1_000_000, 0.25, 7);
            let seen: Vec<(u64, bool)> = (0..expected.len()).map(|_| c.next()).collect();
            assert_eq!(seen, expected, "{d}");
        }
    }

    /// Pins the scramble for odd and even widths `b` (same transcription).
    #[test]
    fn scramble_golden() {
        let golden: [(u64, [u64; 5]); 4] = [
            (5, [4, 2, 3, 1, 0]),
            (10, [3, 5, 6, 7, 8]),
            (2_000_000, [1049316, 504814, 1487727, 527681, 1180907]),
            (
                20_000_000_000,
                [1534805781, 7877786324, 7837005186, 7598011596, 12700390930],
            ),
        ];
        for (n, expected) in golden {
            let s = Scramble::new(n);
            assert_eq!(
                (0..5).map(|r| s.apply(r)).collect::<Vec<_>>(),
                expected,
                "n={n}"
            );
        }
    }

    #[test]
    fn choosers_move_to_reader_threads() {
        fn send<T: Send + 'static>() {}
        send::<KeyChooser>();
        send::<Distribution>();
        send::<DistError>();
    }

    #[test]
    fn uniform_has_no_ranks() {
        let c = chooser(Distribution::Uniform, 10, 0.0, 1);
        assert_eq!(c.rank_of(3), None);
        assert_eq!(c.index_at_rank(3), None);
        assert_eq!(c.hot_count(), None);
        let z = chooser(Distribution::zipf(), 10, 0.0, 1);
        assert_eq!(z.rank_of(10), None);
        assert_eq!(z.index_at_rank(10), None);
    }
}
