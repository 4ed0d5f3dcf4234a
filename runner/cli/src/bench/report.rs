//! The per-bench report canbench prints: each metric with its change against
//! the results file.

use super::compare::{Change, Values};
use super::format::report_value;
use super::measurement::{BenchResult, Measurement};
use super::style::Style;
use std::fmt::Write;

/// The separator line between the parts of the output.
pub const SEPARATOR: &str = "---------------------------------------------------";

/// Appends the report of bench `name` to `out`.
pub fn benchmark(
    out: &mut String,
    name: &str,
    new: &BenchResult,
    old: Option<&BenchResult>,
    noise_threshold: f64,
    style: Style,
) {
    let marker = match old {
        Some(_) => String::new(),
        None => format!(" {}", style.new_marker("(new)")),
    };
    line(out, format!("Benchmark: {}{marker}", style.bold(name)));
    // A total is always one call: its calls are not shown.
    line(out, "  total:".into());
    measurement(
        out,
        &new.total,
        old.map(|o| &o.total),
        noise_threshold,
        false,
        style,
    );
    for (scope, scoped) in &new.scopes {
        line(out, String::new());
        line(out, format!("  {scope} (scope):"));
        let previous = old.and_then(|o| o.scopes.get(scope));
        measurement(out, scoped, previous, noise_threshold, true, style);
    }
}

fn line(out: &mut String, text: String) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{text}");
}

/// A metric's name, how to read it and its unit suffix.
type Metric = (&'static str, fn(&Measurement) -> u64, &'static str);

fn measurement(
    out: &mut String,
    new: &Measurement,
    old: Option<&Measurement>,
    noise_threshold: f64,
    with_calls: bool,
    style: Style,
) {
    let metrics: [Metric; 4] = [
        ("calls", |m| m.calls, ""),
        ("instructions", |m| m.instructions, ""),
        ("heap_increase", |m| m.heap_increase, " pages"),
        (
            "stable_memory_increase",
            |m| m.stable_memory_increase,
            " pages",
        ),
    ];
    for (name, metric, unit) in metrics.iter().skip(usize::from(!with_calls)) {
        let values = Values {
            current: Some(metric(new)),
            previous: old.map(metric),
        };
        let text = format!("{name}: {}{unit}", report_value(metric(new)));
        line(out, metric_line(&text, &values, noise_threshold, style));
    }
}

/// `    <metric>: <value> (<change>)`, coloured by the kind of change.
fn metric_line(text: &str, values: &Values, noise_threshold: f64, style: Style) -> String {
    let percent = values.percent().unwrap_or(0.0);
    let body = match (values.previous, values.status(noise_threshold)) {
        (None, _) => format!("{text} (new)"),
        (Some(0), Change::Regressed) => style.regressed(&format!("{text} (regressed from 0)")),
        (_, Change::Regressed) => style.regressed(&format!("{text} (regressed by {percent:.2}%)")),
        (_, Change::Improved) => {
            style.improved(&format!("{text} (improved by {:.2}%)", percent.abs()))
        }
        _ if percent == 0.0 => format!("{text} (no change)"),
        _ => format!("{text} ({percent:.2}%) (change within noise threshold)"),
    };
    format!("    {body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn result(instructions: u64, heap: u64) -> BenchResult {
        BenchResult {
            total: Measurement {
                calls: 1,
                instructions,
                heap_increase: heap,
                stable_memory_increase: 0,
            },
            scopes: BTreeMap::new(),
        }
    }

    fn report(new: &BenchResult, old: Option<&BenchResult>, threshold: f64) -> String {
        let mut out = String::new();
        benchmark(&mut out, "b", new, old, threshold, Style::plain());
        out
    }

    #[test]
    fn wording_of_each_change() {
        let text = report(&result(207, 0), Some(&result(10, 0)), 2.0);
        assert!(
            text.contains("    instructions: 207 (regressed by 1970.00%)\n"),
            "{text}"
        );
        assert!(text.contains("    heap_increase: 0 pages (no change)\n"));
        let text = report(&result(207, 0), Some(&result(210, 0)), 2.0);
        assert!(text.contains("    instructions: 207 (-1.43%) (change within noise threshold)"));
        let text = report(&result(207, 0), Some(&result(210, 0)), 1.0);
        assert!(text.contains("    instructions: 207 (improved by 1.43%)"));
        let text = report(&result(12_345, 3), Some(&result(12_345, 0)), 2.0);
        assert!(text.contains("    instructions: 12.35 K (no change)"));
        assert!(text.contains("    heap_increase: 3 pages (regressed from 0)"));
        let text = report(&result(207, 0), None, 2.0);
        assert!(text.starts_with("Benchmark: b (new)\n  total:\n    instructions: 207 (new)\n"));
    }

    #[test]
    fn scopes_show_calls() {
        let mut new = result(500, 0);
        new.scopes.insert(
            "inner".into(),
            Measurement {
                calls: 2,
                instructions: 100,
                ..Measurement::default()
            },
        );
        let text = report(&new, Some(&result(500, 0)), 2.0);
        assert!(
            text.contains(
                "\n\n  inner (scope):\n    calls: 2 (new)\n    instructions: 100 (new)\n"
            ),
            "{text}"
        );
    }
}
