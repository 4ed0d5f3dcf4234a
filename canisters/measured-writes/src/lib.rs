//! Test support: every update message measured in `per_call_results.yml`, as the dearest
//! message of each call, so that an engine's `write_cost` bounds can be held to what was
//! measured. The main crate's engines and the ic-sqlite-vfs peer (a workspace of its own) both
//! check their bounds against it.

use serde_yaml::Value;

/// Which of an engine's batch writes a measured call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// `insert_*` and `reinsert_*` calls.
    Insert,
    /// `update_*` calls.
    Update,
    /// `delete_*` calls.
    Delete,
}

/// One measured update call: the dearest of its messages, in instructions for the whole
/// message (the results give per-row figures; this multiplies them back).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasuredWrite {
    /// The meter it ran under (`current`, `pocketic-13`).
    pub meter: String,
    /// The table's state (`ascending`, `aged`).
    pub state: String,
    /// The engine's key in the results (`page_tree`, `ic_sqlite_vfs`, …).
    pub engine: String,
    /// The workload's name (`insert_between_1000`, …).
    pub workload: String,
    /// Which batch write it is.
    pub kind: WriteKind,
    /// Rows per message.
    pub rows: u64,
    /// The dearest message's instructions.
    pub dearest: u64,
}

/// The committed results, at the root of the repository.
pub const RESULTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../per_call_results.yml");

/// Every update call in the results at `path`, or what is wrong with the file.
pub fn measured_writes(path: &str) -> Result<Vec<MeasuredWrite>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{path}: {error}"))?;
    let results: Value = serde_yaml::from_str(&text).map_err(|error| format!("{path}: {error}"))?;
    let mut writes = Vec::new();
    for (meter, states) in mapping(&results["calls"], "calls by meter")? {
        for (state, engines) in mapping(states, "states")? {
            for (engine, workloads) in mapping(engines, "engines")? {
                for (workload, call) in mapping(workloads, "workloads")? {
                    if call["mode"].as_str() != Some("update") {
                        continue;
                    }
                    let workload = name(workload)?;
                    let kind = match workload.split('_').next() {
                        Some("insert" | "reinsert") => WriteKind::Insert,
                        Some("update") => WriteKind::Update,
                        Some("delete") => WriteKind::Delete,
                        _ => return Err(format!("{workload}: which write is it?")),
                    };
                    let rows = number(&call["rows"], &workload, "rows")?;
                    let per_row_max =
                        number(&call["instructions"]["max"], &workload, "instructions.max")?;
                    writes.push(MeasuredWrite {
                        meter: name(meter)?,
                        state: name(state)?,
                        engine: name(engine)?,
                        kind,
                        rows,
                        dearest: per_row_max * rows,
                        workload,
                    });
                }
            }
        }
    }
    Ok(writes)
}

/// Holds an engine's bounds to every write in the results at `path`: `bound` gives the
/// instructions a bound allows the measured write (`None`: not this engine's). The number of
/// writes checked, or the first whose bound is below what it measured.
pub fn check_bounds(
    path: &str,
    bound: impl Fn(&MeasuredWrite) -> Option<u64>,
) -> Result<usize, String> {
    let mut checked = 0;
    for measured in measured_writes(path)? {
        let Some(bound) = bound(&measured) else {
            continue;
        };
        if bound < measured.dearest {
            return Err(format!("bound {bound} below {measured:?}"));
        }
        checked += 1;
    }
    Ok(checked)
}

fn mapping<'a>(
    value: &'a Value,
    what: &str,
) -> Result<impl Iterator<Item = (&'a Value, &'a Value)>, String> {
    value
        .as_mapping()
        .map(|mapping| mapping.iter())
        .ok_or_else(|| format!("the results have no mapping of {what}"))
}

fn name(value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("a key that is not a name: {value:?}"))
}

fn number(value: &Value, workload: &str, field: &str) -> Result<u64, String> {
    value
        .as_u64()
        .ok_or_else(|| format!("{workload}: no {field}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_results_hold_writes_of_every_kind() {
        let writes = measured_writes(RESULTS).expect("the committed results parse");
        for kind in [WriteKind::Insert, WriteKind::Update, WriteKind::Delete] {
            assert!(writes.iter().any(|write| write.kind == kind), "{kind:?}");
        }
        assert!(writes.iter().all(|write| write.dearest >= write.rows));
    }

    #[test]
    fn a_bound_below_a_measured_write_is_reported() {
        let all = measured_writes(RESULTS).expect("the committed results parse");
        let covering = check_bounds(RESULTS, |write| Some(write.dearest));
        assert_eq!(covering, Ok(all.len()));
        let short = check_bounds(RESULTS, |write| Some(write.dearest - 1));
        assert!(short.expect_err("one below").contains("below"));
        assert_eq!(check_bounds(RESULTS, |_| None), Ok(0));
    }

    #[test]
    fn a_workload_of_no_known_write_is_an_error() {
        let dir = std::env::temp_dir().join(format!("measured-writes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let path = dir.join("results.yml");
        let yaml = "calls:\n  current:\n    aged:\n      btree:\n        \
                    merge_1:\n          mode: update\n          rows: 1\n          \
                    instructions: {max: 5}\n";
        std::fs::write(&path, yaml).expect("written");
        let path = path.to_str().expect("a UTF-8 path");
        assert!(measured_writes(path)
            .expect_err("refused")
            .contains("merge_1"));
        std::fs::remove_dir_all(&dir).expect("removed");
    }
}
