//! Number formats of canbench's reports.

/// Units of the short forms, largest first.
const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")];

/// What the CSV file writes for an infinite percentage (a change from 0).
const INFINITE_PERCENT: &str = "1.0E99";

/// A value in the per-bench report: exact below 10,000, else two decimals
/// and a spaced unit (`12.35 K`, `414.58 M`).
pub fn report_value(value: u64) -> String {
    if value < 10_000 {
        return value.to_string();
    }
    let (divisor, unit) = match value {
        ..=999_999 => (1e3, "K"),
        1_000_000..=999_999_999 => (1e6, "M"),
        1_000_000_000..=999_999_999_999 => (1e9, "B"),
        _ => (1e12, "T"),
    };
    format!("{:.2} {unit}", value as f64 / divisor)
}

/// The largest unit not above `|value|`, and the value in it.
fn scaled(value: f64) -> (f64, &'static str) {
    UNITS
        .iter()
        .find(|(divisor, _)| value.abs() >= *divisor)
        .map(|(divisor, unit)| (value / divisor, *unit))
        .unwrap_or((value, ""))
}

/// An unsigned value in the summary table: `207`, `9.00M`.
pub fn human_u64(value: u64) -> String {
    match scaled(value as f64) {
        (plain, "") => format!("{plain}"),
        (short, unit) => format!("{short:.2}{unit}"),
    }
}

/// A signed difference in the summary: `0`, `+197`, `-1.20K`.
pub fn human_i64(value: i64) -> String {
    if value == 0 {
        return "0".into();
    }
    match scaled(value as f64) {
        (plain, "") => format!("{plain:+.0}"),
        (short, unit) => format!("{short:+.2}{unit}"),
    }
}

/// A percentage in the summary and table: signed, except near zero (`0.00%`).
pub fn human_percent(value: f64) -> String {
    if value.abs() < 0.01 {
        format!("{value:.2}%")
    } else {
        format!("{value:+.2}%")
    }
}

/// A percentage in the CSV file: `10.00%`, and `±1.0E99` for infinity.
pub fn csv_percent(value: f64) -> String {
    if value.is_infinite() {
        let sign = if value > 0.0 { "" } else { "-" };
        format!("{sign}{INFINITE_PERCENT}")
    } else {
        format!("{value:.2}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_values() {
        assert_eq!(report_value(207), "207");
        assert_eq!(report_value(9_999), "9999");
        assert_eq!(report_value(12_345), "12.35 K");
        assert_eq!(report_value(414_580_548), "414.58 M");
        assert_eq!(report_value(4_278_312_217), "4.28 B");
        assert_eq!(report_value(5_000_000_000_000), "5.00 T");
        assert_eq!(report_value(50_000_000_000_000), "50.00 T");
    }

    #[test]
    fn human_values() {
        assert_eq!(human_u64(207), "207");
        assert_eq!(human_u64(9_000_000), "9.00M");
        assert_eq!(human_i64(0), "0");
        assert_eq!(human_i64(197), "+197");
        assert_eq!(human_i64(-3), "-3");
        assert_eq!(human_i64(-1_200), "-1.20K");
        assert_eq!(human_percent(0.0), "0.00%");
        assert_eq!(human_percent(1970.0), "+1970.00%");
        assert_eq!(human_percent(-1.428), "-1.43%");
        assert_eq!(csv_percent(10.0), "10.00%");
        assert_eq!(csv_percent(f64::INFINITY), "1.0E99");
        assert_eq!(csv_percent(f64::NEG_INFINITY), "-1.0E99");
    }
}
