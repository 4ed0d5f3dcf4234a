//! The exit status of `icrun bench`: `--fail-on-regression` fails when a
//! bench's instructions grew beyond the noise threshold; `--fail-on-change`
//! fails on any difference beyond it, in either direction and in any metric,
//! and on benches or scopes that are new or missing (a reproduction check).

use super::compare::{entries, Change};
use super::results_file::Results;

/// What makes the run fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gate {
    /// Never fail on results.
    #[default]
    Off,
    /// Fail when a bench total's instructions regressed.
    Regression,
    /// Fail when anything differs from the results file.
    Change,
}

/// Why the gate failed: one line per offending bench or scope (empty: passed).
/// `old` must be limited to the benches this run was asked to run.
pub fn check(gate: Gate, new: &Results, old: &Results, noise_threshold: f64) -> Vec<String> {
    match gate {
        Gate::Off => Vec::new(),
        Gate::Regression => regressions(new, old, noise_threshold),
        Gate::Change => changes(new, old, noise_threshold),
    }
}

fn regressions(new: &Results, old: &Results, noise_threshold: f64) -> Vec<String> {
    entries(new, old)
        .iter()
        .filter(|e| e.scope.is_none())
        .filter(|e| e.instructions.status(noise_threshold) == Change::Regressed)
        .map(|e| {
            format!(
                "{}: instructions regressed by {:.2}%",
                e.name,
                e.instructions.percent().unwrap_or(f64::INFINITY)
            )
        })
        .collect()
}

fn changes(new: &Results, old: &Results, noise_threshold: f64) -> Vec<String> {
    let mut found = Vec::new();
    for entry in entries(new, old) {
        if entry.status == "new" {
            found.push(format!("{}: new", entry.full_name()));
            continue;
        }
        let metrics = ["instructions", "heap_increase", "stable_memory_increase"];
        for (metric, values) in metrics.iter().zip(entry.judged()) {
            if values.status(noise_threshold) != Change::Unchanged {
                let (before, after) = (
                    values.previous.unwrap_or_default(),
                    values.current.unwrap_or_default(),
                );
                found.push(format!(
                    "{}: {metric} changed from {before} to {after}",
                    entry.full_name()
                ));
            }
        }
    }
    for (name, result) in old {
        match new.get(name) {
            None => found.push(format!("{name}: missing")),
            Some(current) => found.extend(
                result
                    .scopes
                    .keys()
                    .filter(|scope| !current.scopes.contains_key(*scope))
                    .map(|scope| format!("{name}::{scope}: missing")),
            ),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{BenchResult, Measurement};

    fn results(items: &[(&str, u64)]) -> Results {
        items
            .iter()
            .map(|(name, instructions)| {
                let total = Measurement {
                    calls: 1,
                    instructions: *instructions,
                    ..Measurement::default()
                };
                (
                    name.to_string(),
                    BenchResult {
                        total,
                        ..BenchResult::default()
                    },
                )
            })
            .collect()
    }

    #[test]
    fn regression_gate() {
        let old = results(&[("a", 1000), ("b", 1000)]);
        let within = results(&[("a", 1019), ("b", 900), ("c", 5)]);
        assert!(check(Gate::Regression, &within, &old, 2.0).is_empty());
        let beyond = results(&[("a", 1020), ("b", 1000)]);
        assert_eq!(check(Gate::Regression, &beyond, &old, 2.0).len(), 1);
        assert!(check(Gate::Off, &beyond, &old, 2.0).is_empty());
    }

    #[test]
    fn change_gate() {
        let old = results(&[("a", 1000), ("b", 1000)]);
        assert!(check(Gate::Change, &old, &old, 2.0).is_empty());
        assert!(check(
            Gate::Change,
            &results(&[("a", 1019), ("b", 981)]),
            &old,
            2.0
        )
        .is_empty());
        let improved = results(&[("a", 980), ("b", 1000)]);
        assert_eq!(
            check(Gate::Change, &improved, &old, 2.0),
            ["a: instructions changed from 1000 to 980"]
        );
        let missing_and_new = results(&[("a", 1000), ("c", 1)]);
        assert_eq!(
            check(Gate::Change, &missing_and_new, &old, 2.0),
            ["c: new", "b: missing"]
        );
    }
}
