//! canbench's summary: per metric, how many bench totals regressed, improved,
//! are new or unchanged, and the spread of the changes.

use super::compare::{Change, Entry, Values};
use super::format::{human_i64, human_percent};
use std::fmt::Write;

/// How to read one metric of an entry.
type Metric = fn(&Entry) -> &Values;

/// Appends the summary of `entries` (bench totals only) to `out`.
pub fn summary(out: &mut String, entries: &[Entry], noise_threshold: f64) {
    let _ = writeln!(out, "Summary:");
    let metrics: [(&str, Metric); 3] = [
        ("instructions", |e| &e.instructions),
        ("heap_increase", |e| &e.heap_increase),
        ("stable_memory_increase", |e| &e.stable_memory_increase),
    ];
    for (index, (label, metric)) in metrics.iter().enumerate() {
        if index > 0 {
            let _ = writeln!(out);
        }
        metric_summary(out, label, entries, noise_threshold, *metric);
    }
}

#[derive(Default)]
struct Counts {
    regressed: usize,
    improved: usize,
    new: usize,
    unchanged: usize,
}

fn metric_summary(
    out: &mut String,
    label: &str,
    entries: &[Entry],
    noise_threshold: f64,
    metric: fn(&Entry) -> &Values,
) {
    let mut counts = Counts::default();
    let mut deltas = Vec::new();
    let mut percents = Vec::new();
    for values in entries.iter().filter(|e| e.scope.is_none()).map(metric) {
        deltas.extend(values.delta());
        percents.extend(values.percent());
        match values.status(noise_threshold) {
            Change::New => counts.new += 1,
            Change::Improved => counts.improved += 1,
            Change::Regressed => counts.regressed += 1,
            Change::Unchanged => counts.unchanged += 1,
        }
    }
    let total = counts.regressed + counts.improved + counts.new + counts.unchanged;
    let _ = writeln!(out, "  {label}:");
    let _ = writeln!(out, "    status:   {}", status_text(&counts));
    let _ = writeln!(
        out,
        "    counts:   [total {total} | regressed {} | improved {} | new {} | unchanged {}]",
        counts.regressed, counts.improved, counts.new, counts.unchanged
    );
    deltas.sort_unstable();
    percents.sort_by(f64::total_cmp);
    let _ = writeln!(
        out,
        "    change:   {}",
        spread(&deltas, |v| human_i64(*v), percentile_i64)
    );
    let _ = writeln!(
        out,
        "    change %: {}",
        spread(&percents, |v| human_percent(*v), percentile_f64)
    );
}

fn status_text(counts: &Counts) -> &'static str {
    match (counts.regressed > 0, counts.improved > 0, counts.new > 0) {
        (false, false, false) => "No significant changes 👍",
        (true, false, false) => "Regressions detected 🔴",
        (false, true, false) => "Improvements detected 🟢",
        (false, false, true) => "New benchmarks added ➕",
        (true, true, false) => "Regressions and improvements 🔴🟢",
        (true, false, true) => "Regressions and new benchmarks 🔴➕",
        (false, true, true) => "Improvements and new benchmarks 🟢➕",
        (true, true, true) => "Regressions, improvements, and new benchmarks 🔴🟢➕",
    }
}

/// `[max … | p75 … | median … | p25 … | min …]` of sorted values, or `n/a`.
fn spread<T: Copy>(
    sorted: &[T],
    format: impl Fn(&T) -> String,
    percentile: fn(&[T], f64) -> T,
) -> String {
    let (Some(first), Some(last)) = (sorted.first(), sorted.last()) else {
        return "n/a".into();
    };
    let parts = [
        ("max", *last),
        ("p75", percentile(sorted, 0.75)),
        ("median", percentile(sorted, 0.5)),
        ("p25", percentile(sorted, 0.25)),
        ("min", *first),
    ];
    let parts: Vec<String> = parts
        .iter()
        .map(|(label, value)| format!("{label} {}", format(value)))
        .collect();
    format!("[{}]", parts.join(" | "))
}

/// Linear interpolation between the two closest ranks of non-empty `sorted`.
fn interpolate(sorted_len: usize, fraction: f64) -> (usize, usize, f64) {
    let rank = fraction * (sorted_len.saturating_sub(1)) as f64;
    (rank.floor() as usize, rank.ceil() as usize, rank.fract())
}

fn percentile_f64(sorted: &[f64], fraction: f64) -> f64 {
    let (low, high, weight) = interpolate(sorted.len(), fraction);
    if low == high {
        sorted[low]
    } else {
        sorted[low] * (1.0 - weight) + sorted[high] * weight
    }
}

fn percentile_i64(sorted: &[i64], fraction: f64) -> i64 {
    let (low, high, weight) = interpolate(sorted.len(), fraction);
    if low == high {
        sorted[low]
    } else {
        (sorted[low] as f64 * (1.0 - weight) + sorted[high] as f64 * weight).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let values = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_f64(&values, 0.5), 2.5);
        assert_eq!(percentile_f64(&values, 0.75), 3.25);
        assert_eq!(percentile_i64(&[10, 20, 30], 0.25), 15);
        assert_eq!(spread::<i64>(&[], |v| v.to_string(), percentile_i64), "n/a");
    }
}
