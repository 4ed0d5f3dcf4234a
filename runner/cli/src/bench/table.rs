//! canbench's "Only significant changes" table: rows whose instructions, heap
//! or stable memory changed beyond the noise threshold (or are new), largest
//! instruction change first.

use super::compare::{Change, Entry};
use std::fmt::Write;

/// At most this many rows are shown; the middle ones are elided.
pub const MAX_DISPLAYED_ROWS: usize = 50;

const COLUMNS: [&str; 9] = [
    "status", "name", "calls", "ins", "ins Δ%", "HI", "HI Δ%", "SMI", "SMI Δ%",
];

/// The rows worth showing, with status `+` (regressed), `-` (improved), `+/-`
/// or `new`, sorted by instruction change (descending), then status, then name.
pub fn significant(entries: &[Entry], noise_threshold: f64) -> Vec<Entry> {
    let mut rows: Vec<Entry> = entries
        .iter()
        .filter_map(|entry| {
            let statuses = entry.judged().map(|v| v.status(noise_threshold));
            if statuses.iter().all(|s| *s == Change::Unchanged) {
                return None;
            }
            let mut row = entry.clone();
            if row.status.is_empty() {
                let regressed = statuses.contains(&Change::Regressed);
                let improved = statuses.contains(&Change::Improved);
                row.status = match (regressed, improved) {
                    (true, true) => "+/-",
                    (true, false) => "+",
                    (false, true) => "-",
                    (false, false) => "",
                }
                .into();
            }
            Some(row)
        })
        .collect();
    rows.sort_by(|a, b| {
        let change = |e: &Entry| e.instructions.percent().unwrap_or(f64::MIN);
        change(b)
            .partial_cmp(&change(a))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.status.cmp(&b.status))
            .then_with(|| a.full_name().cmp(&b.full_name()))
    });
    rows
}

fn cells(entry: &Entry) -> Vec<String> {
    let current =
        |v: &super::compare::Values| v.current.map(super::format::human_u64).unwrap_or_default();
    let percent = |v: &super::compare::Values| {
        v.percent()
            .map(super::format::human_percent)
            .unwrap_or_default()
    };
    let calls = match entry.scope {
        Some(_) => current(&entry.calls),
        None => String::new(),
    };
    vec![
        entry.status.clone(),
        entry.full_name(),
        calls,
        current(&entry.instructions),
        percent(&entry.instructions),
        current(&entry.heap_increase),
        percent(&entry.heap_increase),
        current(&entry.stable_memory_increase),
        percent(&entry.stable_memory_increase),
    ]
}

/// Keeps the first and last rows when there are more than `max_rows`, with
/// a row telling how many were omitted between them.
fn elide(rows: Vec<Vec<String>>, max_rows: usize) -> Vec<Vec<String>> {
    if rows.len() <= max_rows {
        return rows;
    }
    let omitted = rows.len() - max_rows;
    let head = max_rows / 2;
    let tail = max_rows - head;
    let mut marker = vec![String::new(); COLUMNS.len()];
    marker[0] = "...".into();
    let plural = if omitted == 1 { "" } else { "s" };
    marker[1] = format!("... {omitted} row{plural} omitted ...");
    let mut kept: Vec<Vec<String>> = rows[..head].to_vec();
    kept.push(marker);
    kept.extend_from_slice(&rows[rows.len() - tail..]);
    kept
}

/// Appends the table of `entries` (from [`significant`]) to `out`.
pub fn table(out: &mut String, entries: &[Entry], max_rows: usize) {
    let rows = elide(entries.iter().map(cells).collect(), max_rows);
    let header: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    // Widths in bytes, padding in characters: canbench's alignment of the Δ columns.
    let mut widths: Vec<usize> = COLUMNS.iter().map(|c| c.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let print_row = |out: &mut String, row: &[String]| {
        let _ = write!(out, "|");
        for (column, (cell, width)) in row.iter().zip(&widths).enumerate() {
            let _ = match column {
                0 => write!(out, " {cell:^width$} |"),
                1 => write!(out, " {cell:<width$} |"),
                _ => write!(out, " {cell:>width$} |"),
            };
        }
        let _ = writeln!(out);
    };
    print_row(out, &header);
    let _ = write!(out, "|");
    for width in &widths {
        let _ = write!(out, "{}|", "-".repeat(width + 2));
    }
    let _ = writeln!(out);
    for row in &rows {
        print_row(out, row);
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "ins = instructions, HI = heap_increase, SMI = stable_memory_increase, Δ% = percent change"
    );
}
