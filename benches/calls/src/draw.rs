//! Reproducible random draws: SplitMix64, a small generator whose output depends only on its
//! seed, so every run measures the same messages.

use std::collections::HashSet;

/// SplitMix64.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number drawn uniformly from `0..bound` (`bound` > 0), without modulo bias.
    pub fn below(&mut self, bound: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % bound;
        loop {
            let value = self.next_u64();
            if value < zone {
                return value % bound;
            }
        }
    }

    /// Shuffles `items` (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for last in (1..items.len()).rev() {
            let other = self.below(last as u64 + 1) as usize;
            items.swap(last, other);
        }
    }
}

/// Random starts [`Distinct::take_run`] tries before it looks for a free run in order.
const RUN_ATTEMPTS: usize = 1_000;

/// Draws numbers from `0..bound` uniformly, never the same one twice, and never one of
/// `taken`.
#[derive(Debug, Clone)]
pub struct Distinct {
    rng: Rng,
    bound: u64,
    taken: HashSet<u64>,
}

impl Distinct {
    /// Draws from `0..bound` with `seed`.
    pub fn new(seed: u64, bound: u64) -> Self {
        Distinct {
            rng: Rng::new(seed),
            bound,
            taken: HashSet::new(),
        }
    }

    /// The next number not drawn before.
    pub fn next(&mut self) -> u64 {
        loop {
            let value = self.rng.below(self.bound);
            if self.taken.insert(value) {
                return value;
            }
        }
    }

    /// `count` numbers not drawn before.
    pub fn take(&mut self, count: usize) -> Vec<u64> {
        (0..count).map(|_| self.next()).collect()
    }

    /// Whether `value` was drawn (or marked).
    pub fn contains(&self, value: u64) -> bool {
        self.taken.contains(&value)
    }

    /// A run of `count` consecutive numbers none of which was drawn, starting at a number
    /// drawn uniformly; they are drawn from now on. When [`RUN_ATTEMPTS`] draws all hit a
    /// drawn number (a small range, mostly drawn), the first free run from the last draw on
    /// (wrapping around); `None` when there is none.
    pub fn take_run(&mut self, count: u64) -> Option<std::ops::Range<u64>> {
        let starts = self.bound.checked_sub(count)? + 1;
        let free = |taken: &HashSet<u64>, start: u64| {
            (start..start + count).all(|value| !taken.contains(&value))
        };
        let mut start = 0;
        for _ in 0..RUN_ATTEMPTS {
            start = self.rng.below(starts);
            if free(&self.taken, start) {
                return Some(self.mark(start..start + count));
            }
        }
        let found = (0..starts)
            .map(|offset| (start + offset) % starts)
            .find(|start| free(&self.taken, *start))?;
        Some(self.mark(found..found + count))
    }

    fn mark(&mut self, run: std::ops::Range<u64>) -> std::ops::Range<u64> {
        self.taken.extend(run.clone());
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_uniform_and_distinct() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let draws: Vec<u64> = (0..1_000).map(|_| a.below(10)).collect();
        assert_eq!(draws, (0..1_000).map(|_| b.below(10)).collect::<Vec<_>>());
        for digit in 0..10 {
            let hits = draws.iter().filter(|d| **d == digit).count();
            assert!((60..140).contains(&hits), "{digit}: {hits}");
        }
        let mut distinct = Distinct::new(3, 100);
        let taken = distinct.take(100);
        let unique: HashSet<u64> = taken.iter().copied().collect();
        assert_eq!(unique.len(), 100);
        assert!(taken.iter().all(|value| distinct.contains(*value)));
        let mut runs = Distinct::new(4, 1_000);
        let first = runs.take_run(100).unwrap();
        let second = runs.take_run(100).unwrap();
        assert_eq!(
            (first.end - first.start, second.end - second.start),
            (100, 100)
        );
        assert!(first.end <= second.start || second.end <= first.start);
        // A range nearly all drawn: the one free run left is found, then none.
        let mut full = Distinct::new(5, 300);
        full.taken
            .extend((0..300).filter(|value| !(120..150).contains(value)));
        assert_eq!(full.take_run(30), Some(120..150));
        assert_eq!(full.take_run(1), None);
    }
}
