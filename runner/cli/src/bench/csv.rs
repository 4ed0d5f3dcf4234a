//! The CSV file of `--csv`: canbench's columns, full numbers, one row per
//! bench total and per scope.

use super::compare::{Entry, Values};
use super::format::csv_percent;

const HEADER: [&str; 14] = [
    "status",
    "name",
    "scope_calls",
    "scope_calls Δ",
    "scope_calls Δ%",
    "instructions",
    "instructions Δ",
    "instructions Δ%",
    "heap_increase",
    "heap_increase Δ",
    "heap_increase Δ%",
    "stable_memory_increase",
    "stable_memory_increase Δ",
    "stable_memory_increase Δ%",
];

/// Current value, delta and delta % of a metric (empty where unknown).
fn triple(values: &Values) -> [String; 3] {
    [
        values.current.map(|v| v.to_string()).unwrap_or_default(),
        values.delta().map(|v| v.to_string()).unwrap_or_default(),
        values.percent().map(csv_percent).unwrap_or_default(),
    ]
}

/// The CSV text of `entries`.
pub fn render(entries: &[Entry]) -> String {
    let mut text = HEADER.join(",");
    text.push('\n');
    for entry in entries {
        let calls = match entry.scope {
            Some(_) => triple(&entry.calls),
            None => Default::default(),
        };
        let mut row = vec![entry.status.clone(), entry.full_name()];
        row.extend(calls);
        for values in entry.judged() {
            row.extend(triple(values));
        }
        text.push_str(&row.join(","));
        text.push('\n');
    }
    text
}
