//! Which ids each workload touches, deterministically.
//!
//! A bench runs its workload three times, in three phases: cold (the first call after
//! install, what canbench reports by default), a warm-up, and warm (the steady state a
//! long-lived canister sees). The phases touch disjoint ids so that every insert is new and
//! every delete finds its row.

use crate::tables::ID_STEP;

/// One of the three runs of a workload inside a bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The first run after install: empty caches, statements not yet prepared.
    Cold,
    /// A run that warms caches up; not reported.
    Warmup,
    /// The run after the warm-up.
    Warm,
}

impl Phase {
    /// The three phases in the order a bench runs them.
    pub const ALL: [Phase; 3] = [Self::Cold, Self::Warmup, Self::Warm];

    /// The scope name a bench reports the phase under.
    pub fn scope(self) -> &'static str {
        match self {
            Self::Cold => "cold",
            Self::Warmup => "warmup",
            Self::Warm => "warm",
        }
    }

    fn index(self) -> u64 {
        match self {
            Self::Cold => 0,
            Self::Warmup => 1,
            Self::Warm => 2,
        }
    }
}

/// Operations of the warm-up phase at least (the warm-up runs `max(n, WARMUP_OPERATIONS)`).
pub const WARMUP_OPERATIONS: u64 = 1_000;

/// How many operations a phase runs for a workload of `n` operations.
pub fn operations(phase: Phase, n: u64) -> u64 {
    match phase {
        Phase::Warmup => n.max(WARMUP_OPERATIONS),
        Phase::Cold | Phase::Warm => n,
    }
}

/// A prime that shares no factor with any table size (10^k): multiplying by it modulo the row
/// count permutes the positions, which spreads "random" ids over the whole table.
const SPREAD: u64 = 7_919;

/// `count` distinct positions spread over a table of `rows`, disjoint between phases (as long
/// as `3 × count < rows`).
fn spread_positions(rows: u64, phase: Phase, count: u64) -> impl Iterator<Item = u64> {
    (0..count).map(move |i| ((3 * i + phase.index()) * SPREAD) % rows)
}

/// Free ids in the middle of the id range (ending in 5), consecutive: the cold phase starts at
/// the middle, the warm-up at a quarter, the warm phase at three quarters.
pub fn middle_ids(rows: u64, phase: Phase, count: u64) -> Vec<u64> {
    let start = match phase {
        Phase::Cold => rows / 2,
        Phase::Warmup => rows / 4,
        Phase::Warm => rows / 4 * 3,
    };
    (start..start + count)
        .map(|position| position * ID_STEP + 5)
        .collect()
}

/// Free ids above every existing one, increasing: each phase continues after the previous
/// phase's ids (for a workload of `n` operations).
pub fn append_ids(rows: u64, phase: Phase, n: u64) -> Vec<u64> {
    let start = match phase {
        Phase::Cold => rows,
        Phase::Warmup => rows + n,
        Phase::Warm => rows + n + operations(Phase::Warmup, n),
    };
    (start..start + operations(phase, n))
        .map(|position| position * ID_STEP)
        .collect()
}

/// Existing ids spread over the table, distinct within and between phases.
pub fn existing_ids(rows: u64, phase: Phase, count: u64) -> Vec<u64> {
    spread_positions(rows, phase, count)
        .map(|position| position * ID_STEP)
        .collect()
}

/// Absent ids (ending in 5) spread over the table.
pub fn missing_ids(rows: u64, phase: Phase, count: u64) -> Vec<u64> {
    spread_positions(rows, phase, count)
        .map(|position| position * ID_STEP + 5)
        .collect()
}

/// Where a phase's page starts: after the id at the middle, a quarter or three quarters.
pub fn page_start(rows: u64, phase: Phase) -> u64 {
    let position = match phase {
        Phase::Cold => rows / 2,
        Phase::Warmup => rows / 4,
        Phase::Warm => rows / 4 * 3,
    };
    position * ID_STEP
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn all_phases(ids: impl Fn(Phase) -> Vec<u64>) -> Vec<u64> {
        Phase::ALL.into_iter().flat_map(ids).collect()
    }

    #[test]
    fn phases_touch_disjoint_ids() {
        let rows = 1_000_000;
        for n in [1, 10, 100, 1_000, 10_000] {
            for ids in [
                all_phases(|phase| middle_ids(rows, phase, operations(phase, n))),
                all_phases(|phase| append_ids(rows, phase, n)),
                all_phases(|phase| existing_ids(rows, phase, operations(phase, n))),
            ] {
                let distinct: HashSet<_> = ids.iter().collect();
                assert_eq!(distinct.len(), ids.len(), "n = {n}");
            }
        }
    }

    #[test]
    fn ids_have_the_promised_shape() {
        let rows = 100_000;
        let max_existing = (rows - 1) * ID_STEP;
        assert!(middle_ids(rows, Phase::Cold, 10)
            .iter()
            .all(|id| id % 10 == 5));
        assert!(append_ids(rows, Phase::Cold, 10)
            .iter()
            .all(|id| *id > max_existing));
        assert_eq!(append_ids(rows, Phase::Warmup, 10).len(), 1_000);
        assert!(existing_ids(rows, Phase::Warm, 500)
            .iter()
            .all(|id| id % 10 == 0 && *id <= max_existing));
        assert!(missing_ids(rows, Phase::Cold, 100)
            .iter()
            .all(|id| id % 10 == 5));
    }
}
