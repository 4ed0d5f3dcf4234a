//! The reproduction check CI runs: a fixed subset of the suite measured again and compared,
//! figure for figure, with the committed `per_call_results.yml`.
//!
//! The whole suite takes longer than CI's budget allows, so CI measures one configuration again
//! at the headline size: the page tree's traced one, on the aged table under both profiles,
//! with its traces (every workload, every message, and the flame graphs of the headline
//! calls). The other engines' figures are checked by the size sweep's two smallest sizes
//! (`bench-calls --sizes --check`) and at the headline size by both canbench suites; a
//! million-row aged table of each of them would take CI minutes per engine to fill.
//! Instruction counts are deterministic, so a figure that differs means the code, the
//! toolchain or icrun changed it.

use crate::run::{measure, Selection, PROFILES};
use crate::tables::TableState;
use serde_yaml::Value;
use std::path::Path;

/// The canister of the engine whose traced configuration CI measures again.
pub(crate) const CHECKED_CANISTER: &str = "page-tree";

/// The configurations, states and profiles CI measures again.
pub fn subset() -> Selection {
    Selection {
        configurations: engine_registry::engines()
            .iter()
            .filter(|engine| engine.canister == CHECKED_CANISTER)
            .map(|engine| engine.traced().key.clone())
            .collect(),
        states: vec![TableState::Aged],
        profiles: PROFILES.to_vec(),
        traces: true,
    }
}

/// Measures [`subset`] and compares it with the committed `results`; the flame graphs go to
/// `flamegraphs`, for the caller to compare with the committed ones.
pub fn against(canisters: &Path, results: &Path, flamegraphs: &Path) -> Result<(), String> {
    let measured = measure(canisters, flamegraphs, &subset())?;
    against_file(&measured, results, "bench-calls --check")
}

/// Compares every figure of `measured` with the same figure in the committed file `results`
/// (figures `measured` lacks are not compared), printing each that differs; `what` names
/// the check in its message.
pub fn against_file(
    measured: &impl serde::Serialize,
    results: &Path,
    what: &str,
) -> Result<(), String> {
    let committed = std::fs::read_to_string(results)
        .map_err(|error| format!("reading {}: {error}", results.display()))?;
    let committed: Value = serde_yaml::from_str(&committed)
        .map_err(|error| format!("{}: {error}", results.display()))?;
    let measured = serde_yaml::to_value(measured).map_err(|error| format!("encoding: {error}"))?;
    let differences = compare(&measured, &committed);
    if differences.is_empty() {
        eprintln!("{what}: every figure measured is the committed one");
        return Ok(());
    }
    for difference in &differences {
        eprintln!("{difference}");
    }
    Err(format!(
        "{} figures differ from {}",
        differences.len(),
        results.display()
    ))
}

/// Every leaf of `measured` whose committed value differs, as `path: committed → measured`.
fn compare(measured: &Value, committed: &Value) -> Vec<String> {
    let mut differences = Vec::new();
    walk(measured, Some(committed), String::new(), &mut differences);
    differences
}

fn walk(measured: &Value, committed: Option<&Value>, path: String, out: &mut Vec<String>) {
    match measured {
        Value::Mapping(entries) => {
            for (key, value) in entries {
                let name = key
                    .as_str()
                    .map_or_else(|| format!("{key:?}"), str::to_string);
                let child = committed.and_then(|committed| committed.get(key));
                walk(value, child, format!("{path}/{name}"), out);
            }
        }
        leaf => match committed {
            Some(committed) if committed == leaf => {}
            Some(committed) => out.push(format!("{path}: {committed:?} → {leaf:?}")),
            None => out.push(format!("{path}: not in the committed file")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_missing_figure_is_reported() {
        let committed: Value = serde_yaml::from_str("a: {b: 1, c: [1, 2]}\nd: 4").unwrap();
        let same: Value = serde_yaml::from_str("a: {b: 1, c: [1, 2]}").unwrap();
        assert!(compare(&same, &committed).is_empty());
        let changed: Value = serde_yaml::from_str("a: {b: 2, c: [1, 2], e: 5}").unwrap();
        let differences = compare(&changed, &committed);
        assert_eq!(differences.len(), 2, "{differences:?}");
        assert!(differences[0].starts_with("/a/b"));
        assert!(differences[1].contains("not in the committed file"));
    }

    #[test]
    fn the_subset_measures_the_page_tree_configuration_that_is_traced() {
        let page_tree = engine_registry::engines()
            .iter()
            .find(|engine| engine.canister == CHECKED_CANISTER)
            .expect("the registry has the checked canister");
        assert_eq!(
            subset().configurations,
            vec![page_tree.traced().key.clone()]
        );
    }
}
