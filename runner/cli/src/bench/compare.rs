//! New results against old ones: one [`Entry`] per bench total and per scope,
//! each metric's change classified against the noise threshold as canbench does.

use super::measurement::Measurement;
use super::results_file::Results;

/// How a metric changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// No earlier value.
    New,
    /// Lower by at least the noise threshold.
    Improved,
    /// Higher by at least the noise threshold (or up from 0).
    Regressed,
    /// Within the noise threshold (or no current value).
    Unchanged,
}

/// A metric's current and previous value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Values {
    /// This run's value.
    pub current: Option<u64>,
    /// The results file's value.
    pub previous: Option<u64>,
}

impl Values {
    /// current − previous, when both exist.
    pub fn delta(&self) -> Option<i64> {
        Some(self.current? as i64 - self.previous? as i64)
    }

    /// The change in percent of the previous value (±infinity from 0).
    pub fn percent(&self) -> Option<f64> {
        let delta = self.delta()?;
        let previous = self.previous?;
        Some(match (previous, delta.signum()) {
            (_, 0) => 0.0,
            (0, 1) => f64::INFINITY,
            (0, _) => f64::NEG_INFINITY,
            _ => delta as f64 / previous as f64 * 100.0,
        })
    }

    /// The change, with `noise_threshold` in percent.
    pub fn status(&self, noise_threshold: f64) -> Change {
        match (self.current, self.previous) {
            (Some(_), None) => Change::New,
            // An identical value is unchanged even with a zero threshold.
            (Some(_), Some(_)) => match self.percent() {
                Some(p) if p == 0.0 || p.abs() < noise_threshold => Change::Unchanged,
                Some(p) if p < 0.0 => Change::Improved,
                Some(_) => Change::Regressed,
                None => Change::Unchanged,
            },
            // A bench that is gone is not reported by canbench.
            (None, _) => Change::Unchanged,
        }
    }
}

/// One row: a bench's total (`scope` None) or one of its scopes.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `"new"` when the bench (or scope) has no earlier result, else empty.
    pub status: String,
    /// Bench name.
    pub name: String,
    /// Scope name, for scope rows.
    pub scope: Option<String>,
    /// Calls of the scope.
    pub calls: Values,
    /// Instructions.
    pub instructions: Values,
    /// Heap increase in pages.
    pub heap_increase: Values,
    /// Stable memory increase in pages.
    pub stable_memory_increase: Values,
}

impl Entry {
    fn new(name: &str, scope: Option<&str>, new: &Measurement, old: Option<&Measurement>) -> Entry {
        let values = |metric: fn(&Measurement) -> u64| Values {
            current: Some(metric(new)),
            previous: old.map(metric),
        };
        Entry {
            status: if old.is_none() {
                "new".into()
            } else {
                String::new()
            },
            name: name.to_string(),
            scope: scope.map(str::to_string),
            calls: values(|m| m.calls),
            instructions: values(|m| m.instructions),
            heap_increase: values(|m| m.heap_increase),
            stable_memory_increase: values(|m| m.stable_memory_increase),
        }
    }

    /// `name` or `name::scope`.
    pub fn full_name(&self) -> String {
        match &self.scope {
            Some(scope) => format!("{}::{scope}", self.name),
            None => self.name.clone(),
        }
    }

    /// The three metrics the summary and table judge.
    pub fn judged(&self) -> [&Values; 3] {
        [
            &self.instructions,
            &self.heap_increase,
            &self.stable_memory_increase,
        ]
    }
}

/// Rows for every new result, by bench name, each total followed by its scopes.
pub fn entries(new: &Results, old: &Results) -> Vec<Entry> {
    let mut rows = Vec::new();
    for (name, result) in new {
        let previous = old.get(name);
        rows.push(Entry::new(
            name,
            None,
            &result.total,
            previous.map(|p| &p.total),
        ));
        for (scope, measurement) in &result.scopes {
            let previous_scope = previous.and_then(|p| p.scopes.get(scope));
            rows.push(Entry::new(name, Some(scope), measurement, previous_scope));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(current: u64, previous: u64) -> Values {
        Values {
            current: Some(current),
            previous: Some(previous),
        }
    }

    #[test]
    fn threshold_classification() {
        // 2% threshold: a change of exactly 2% is significant, 1.99% is noise.
        assert_eq!(values(10_200, 10_000).status(2.0), Change::Regressed);
        assert_eq!(values(10_199, 10_000).status(2.0), Change::Unchanged);
        assert_eq!(values(9_800, 10_000).status(2.0), Change::Improved);
        assert_eq!(values(9_801, 10_000).status(2.0), Change::Unchanged);
        assert_eq!(values(10_000, 10_000).status(0.0), Change::Unchanged);
        assert_eq!(values(10_001, 10_000).status(0.0), Change::Regressed);
        assert_eq!(values(1, 0).status(2.0), Change::Regressed);
        assert_eq!(values(0, 0).status(2.0), Change::Unchanged);
        assert_eq!(values(0, 5).percent(), Some(-100.0));
        let new = Values {
            current: Some(1),
            previous: None,
        };
        assert_eq!(new.status(2.0), Change::New);
        assert_eq!(new.delta(), None);
    }
}
