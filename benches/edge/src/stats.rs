//! Summaries of measured latencies: percentiles of one run, medians and spread over runs.

use serde::Serialize;
use std::time::Duration;

/// One run of one workload: every request's latency, in microseconds, sorted.
pub struct Latencies(Vec<f64>);

impl Latencies {
    /// From the measured durations.
    pub fn new(durations: &[Duration]) -> Self {
        let mut micros: Vec<f64> = durations.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        micros.sort_by(f64::total_cmp);
        Self(micros)
    }

    /// The `fraction` percentile (nearest rank), 0 for no requests.
    pub fn percentile(&self, fraction: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        let rank = ((fraction * self.0.len() as f64).ceil() as usize).clamp(1, self.0.len());
        self.0[rank - 1]
    }

    /// The mean.
    pub fn mean(&self) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.iter().sum::<f64>() / self.0.len() as f64
    }
}

/// A figure over repeated runs: the median of the runs, and the lowest and highest run.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct OverRuns {
    /// The median of the runs' values.
    pub median: f64,
    /// The lowest run.
    pub min: f64,
    /// The highest run.
    pub max: f64,
}

impl OverRuns {
    /// From one value per run.
    pub fn of(values: &[f64]) -> Self {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = match sorted.len() {
            0 => 0.0,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        };
        Self {
            median: round(median),
            min: round(sorted.first().copied().unwrap_or_default()),
            max: round(sorted.last().copied().unwrap_or_default()),
        }
    }
}

impl Default for OverRuns {
    /// No runs: zeros.
    fn default() -> Self {
        Self::of(&[])
    }
}

/// One decimal: the figures are wall-clock, more digits would only be noise.
fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let latencies = Latencies::new(&(1..=100).map(Duration::from_micros).collect::<Vec<_>>());
        assert_eq!(latencies.percentile(0.5), 50.0);
        assert_eq!(latencies.percentile(0.99), 99.0);
        assert_eq!(latencies.mean(), 50.5);
    }

    #[test]
    fn over_runs_takes_the_median_and_the_range() {
        let figure = OverRuns::of(&[3.0, 1.0, 2.0]);
        assert_eq!((figure.median, figure.min, figure.max), (2.0, 1.0, 3.0));
        assert_eq!(OverRuns::of(&[1.0, 2.0]).median, 1.5);
    }
}
