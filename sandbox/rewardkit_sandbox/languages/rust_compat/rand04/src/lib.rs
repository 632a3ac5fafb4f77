//! The `Rng` methods of rand 0.4 on top of rand 0.8, for programs written against
//! rand 0.4 (HumanEval-X's Rust tests call `rng.gen_range(low, high)`; rand 0.8 takes
//! one range, `gen_range(low..high)`). Everything else is rand 0.8's own, re-exported:
//! `thread_rng`, `random`, `SeedableRng`, `rngs`, `distributions`, `seq`.
//!
//! What it offers of rand 0.4's `Rng`: `gen`, `gen_range(low, high)` (a value in
//! `[low, high)`, panicking when `low >= high`, as 0.4 did), `gen_weighted_bool(n)`,
//! `gen_bool(p)`, `choose(&slice)` and `shuffle(&mut slice)`. Not offered: 0.4's
//! `Rand` trait, `gen_iter`, `gen_ascii_chars` and its `distributions::Range` types.
//! The random streams are rand 0.8's: a seeded generator does not repeat 0.4's numbers.

pub use rand08::rngs::{StdRng, ThreadRng};
pub use rand08::{random, thread_rng, CryptoRng, Error, RngCore, SeedableRng};

/// rand 0.8's distributions (`Standard`, `Uniform`, ...).
pub mod distributions {
    pub use rand08::distributions::*;
}

/// rand 0.8's generators.
pub mod rngs {
    pub use rand08::rngs::*;
}

/// rand 0.8's sequence helpers (`SliceRandom`, `IteratorRandom`).
pub mod seq {
    pub use rand08::seq::*;
}

use rand08::distributions::uniform::SampleUniform;
use rand08::distributions::{Distribution, Standard};

/// rand 0.4's `Rng`: implemented for every generator.
pub trait Rng: RngCore {
    /// A random value of type `T`.
    fn gen<T>(&mut self) -> T
    where
        Standard: Distribution<T>,
    {
        Standard.sample(self)
    }

    /// A value in `[low, high)` (rand 0.4's two-argument form).
    fn gen_range<T: SampleUniform + PartialOrd>(&mut self, low: T, high: T) -> T {
        assert!(low < high, "Rng::gen_range called with low >= high");
        rand08::distributions::Uniform::new(low, high).sample(self)
    }

    /// `true` with probability `1 / n` (always for `n <= 1`).
    fn gen_weighted_bool(&mut self, n: u32) -> bool {
        n <= 1 || Rng::gen_range(self, 0, n) == 0
    }

    /// `true` with probability `p`.
    fn gen_bool(&mut self, p: f64) -> bool {
        rand08::distributions::Bernoulli::new(p)
            .expect("Rng::gen_bool: p is not in [0, 1]")
            .sample(self)
    }

    /// A random element, or `None` for an empty slice.
    fn choose<'a, T>(&mut self, values: &'a [T]) -> Option<&'a T> {
        if values.is_empty() {
            None
        } else {
            Some(&values[Rng::gen_range(self, 0, values.len())])
        }
    }

    /// The slice shuffled in place (Fisher-Yates).
    fn shuffle<T>(&mut self, values: &mut [T]) {
        let mut i = values.len();
        while i > 1 {
            let j = Rng::gen_range(self, 0, i);
            i -= 1;
            values.swap(i, j);
        }
    }
}

impl<R: RngCore + ?Sized> Rng for R {}
