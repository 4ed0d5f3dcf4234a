//! The command line of `icrun bench`, canbench's flags plus `--config`,
//! `--fail-on-regression` and `--fail-on-change`.

use super::gate::Gate;
use crate::call::parse_metering;
use icrun::Metering;
use std::path::PathBuf;

/// Usage text of `icrun bench`.
pub const USAGE: &str = "usage: icrun bench [PATTERN] [--config FILE] [--persist] [--csv] \
[--noise-threshold PCT] [--show-canister-output] [--less-verbose] [--hide-results] \
[--show-summary] [--fail-on-regression | --fail-on-change] [--instruction-tracing] \
[--breakdown] [--metering pocketic-13|current]";

/// canbench's default noise threshold, in percent (docs/metering.md §9).
pub const DEFAULT_NOISE_THRESHOLD: f64 = 2.0;

/// Parsed options of `icrun bench`.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// Only benches whose name contains this run.
    pub pattern: Option<String>,
    /// The configuration file (default: `$CANBENCH_CFG_FILE` or `canbench.yml`).
    pub config: Option<PathBuf>,
    /// Write the results file.
    pub persist: bool,
    /// Write the CSV file.
    pub csv: bool,
    /// Changes below this percentage are noise.
    pub noise_threshold: f64,
    /// Print the canister's debug output (to stderr).
    pub show_canister_output: bool,
    /// Do not print the summary (unless `show_summary`).
    pub less_verbose: bool,
    /// Do not print each bench's report.
    pub hide_results: bool,
    /// Print the summary even with `less_verbose`.
    pub show_summary: bool,
    /// When the run fails because of its results.
    pub gate: Gate,
    /// Write a flame graph of each bench (`<bench>.svg` beside the results file).
    pub instruction_tracing: bool,
    /// Print where each bench's instructions went.
    pub breakdown: bool,
    /// The metering profile (results under another profile than the default do not
    /// compare with canbench's).
    pub metering: Metering,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            pattern: None,
            config: None,
            persist: false,
            csv: false,
            noise_threshold: DEFAULT_NOISE_THRESHOLD,
            show_canister_output: false,
            less_verbose: false,
            hide_results: false,
            show_summary: false,
            gate: Gate::Off,
            instruction_tracing: false,
            breakdown: false,
            metering: Metering::default(),
        }
    }
}

impl BenchOptions {
    /// Parses the arguments after `bench`. Flags taking a value accept
    /// `--flag VALUE` and `--flag=VALUE`.
    pub fn parse(args: &[String]) -> Result<BenchOptions, String> {
        let mut options = BenchOptions::default();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if arg.starts_with("--") => (flag, Some(value.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| iter.next().cloned())
                    .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
            };
            match flag {
                "--persist" => options.persist = true,
                "--csv" => options.csv = true,
                "--show-canister-output" => options.show_canister_output = true,
                "--less-verbose" => options.less_verbose = true,
                "--hide-results" => options.hide_results = true,
                "--show-summary" => options.show_summary = true,
                "--fail-on-regression" => options.set_gate(Gate::Regression)?,
                "--fail-on-change" => options.set_gate(Gate::Change)?,
                "--instruction-tracing" => options.instruction_tracing = true,
                "--breakdown" => options.breakdown = true,
                "--metering" => options.metering = parse_metering(&value("--metering")?)?,
                // canbench checks its PocketIC binary's hash; icrun has none.
                "--no-runtime-integrity-check" => {}
                "--config" => options.config = Some(PathBuf::from(value("--config")?)),
                "--noise-threshold" => {
                    options.noise_threshold = parse_threshold(&value("--noise-threshold")?)?
                }
                "--runtime-path" => {
                    return Err(format!(
                        "{flag} is a PocketIC feature icrun does not provide"
                    ))
                }
                other if other.starts_with('-') => {
                    return Err(format!("unknown option {other}\n{USAGE}"))
                }
                _ if options.pattern.is_none() => options.pattern = Some(arg.clone()),
                _ => return Err(format!("unexpected argument {arg}\n{USAGE}")),
            }
        }
        Ok(options)
    }

    fn set_gate(&mut self, gate: Gate) -> Result<(), String> {
        if self.gate != Gate::Off && self.gate != gate {
            return Err("--fail-on-regression and --fail-on-change exclude each other".into());
        }
        self.gate = gate;
        Ok(())
    }

    /// Whether bench `name` is selected by the pattern.
    pub fn selects(&self, name: &str) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|p| name.contains(p.as_str()))
    }
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!(
            "--noise-threshold needs a non-negative percentage, not {text:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<BenchOptions, String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        BenchOptions::parse(&args)
    }

    #[test]
    fn flags() {
        let options = parse(&[
            "insert",
            "--persist",
            "--csv",
            "--noise-threshold",
            "0.5",
            "--config=x/canbench.yml",
            "--fail-on-change",
        ])
        .expect("valid");
        assert_eq!(options.pattern.as_deref(), Some("insert"));
        assert!(options.persist && options.csv);
        assert_eq!(options.noise_threshold, 0.5);
        assert_eq!(options.config, Some(PathBuf::from("x/canbench.yml")));
        assert_eq!(options.gate, Gate::Change);
        let traced = parse(&[
            "--instruction-tracing",
            "--breakdown",
            "--metering=master-2026",
        ])
        .expect("valid");
        assert!(traced.instruction_tracing && traced.breakdown);
        assert_eq!(traced.metering, Metering::Current);
        assert!(options.selects("btreemap_insert") && !options.selects("get"));
        assert_eq!(parse(&[]).expect("valid"), BenchOptions::default());
    }

    #[test]
    fn errors() {
        assert!(parse(&["--noise-threshold"]).is_err());
        assert!(parse(&["--noise-threshold", "-1"]).is_err());
        assert!(parse(&["--noise-threshold", "two"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["a", "b"]).is_err());
        assert!(parse(&["--fail-on-change", "--fail-on-regression"]).is_err());
    }
}
