//! The spread of a workload's messages: mean and percentiles of their instructions.

use serde::{Deserialize, Serialize};

/// The spread of a set of measured values (instructions of messages, or per row).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Messages measured.
    pub messages: u64,
    /// Their mean, rounded to the nearest unit.
    pub mean: u64,
    /// The median (the nearest-rank 50th percentile).
    pub p50: u64,
    /// The nearest-rank 90th percentile.
    pub p90: u64,
    /// The nearest-rank 99th percentile.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

impl Spread {
    /// The spread of `values`, divided by `rows` (a batch's figures are per row); `None` for
    /// no values.
    pub fn of(values: &[u64], rows: u64) -> Option<Spread> {
        if values.is_empty() || rows == 0 {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let per_row = |value: u64| (value + rows / 2) / rows;
        let rank = |percent: u64| {
            // Nearest rank: the smallest value with at least `percent`% of values at or below.
            let count = sorted.len() as u64;
            let index = (percent * count).div_ceil(100).max(1) - 1;
            per_row(sorted[index as usize])
        };
        let total: u128 = sorted.iter().map(|value| u128::from(*value)).sum();
        let divisor = sorted.len() as u128 * u128::from(rows);
        Some(Spread {
            messages: sorted.len() as u64,
            mean: ((total + divisor / 2) / divisor) as u64,
            p50: rank(50),
            p90: rank(90),
            p99: rank(99),
            max: per_row(sorted[sorted.len() - 1]),
        })
    }

    /// The index, in `values`, of the message at the median (the first one if several), the
    /// one whose breakdown and trace are kept.
    pub fn median_index(values: &[u64]) -> Option<usize> {
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by_key(|index| (values[*index], *index));
        order.get(values.len().div_ceil(2).max(1) - 1).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<u64> = (1..=200).collect();
        let spread = Spread::of(&values, 1).unwrap();
        assert_eq!(
            (
                spread.messages,
                spread.mean,
                spread.p50,
                spread.p90,
                spread.p99,
                spread.max
            ),
            (200, 101, 100, 180, 198, 200)
        );
        let one = Spread::of(&[7], 1).unwrap();
        assert_eq!((one.mean, one.p50, one.p99, one.max), (7, 7, 7, 7));
        assert_eq!(Spread::of(&[], 1), None);
    }

    #[test]
    fn batches_are_per_row() {
        let spread = Spread::of(&[1_000_000, 2_000_000], 1_000).unwrap();
        assert_eq!((spread.mean, spread.p50, spread.max), (1_500, 1_000, 2_000));
    }

    #[test]
    fn the_median_message_is_found() {
        assert_eq!(Spread::median_index(&[30, 10, 20]), Some(2));
        assert_eq!(Spread::median_index(&[5, 5, 1, 9]), Some(0));
        assert_eq!(Spread::median_index(&[]), None);
    }
}
