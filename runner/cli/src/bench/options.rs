//! The command line of `icrun bench`: canbench's flags (docs/metering.md §9) plus
//! `--config`, `--fail-on-regression`, `--fail-on-change`, `--instruction-tracing`,
//! `--breakdown` and `--metering`.

use super::gate::Gate;
use crate::args;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use icrun::Metering;
use std::path::PathBuf;

/// canbench's default noise threshold, in percent (docs/metering.md §9).
pub const DEFAULT_NOISE_THRESHOLD: f64 = 2.0;

/// Parsed options of `icrun bench`.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct BenchOptions {
    /// Only benches whose name contains this run.
    pub pattern: Option<String>,
    /// The configuration file (default: `$CANBENCH_CFG_FILE` or `canbench.yml`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write the results file.
    #[arg(long)]
    pub persist: bool,
    /// Write the CSV file.
    #[arg(long)]
    pub csv: bool,
    /// Changes below this percentage are noise.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_NOISE_THRESHOLD,
          value_parser = parse_threshold, allow_negative_numbers = true)]
    pub noise_threshold: f64,
    /// Print the canister's debug output (to stderr).
    #[arg(long)]
    pub show_canister_output: bool,
    /// Do not print the summary (unless `--show-summary`).
    #[arg(long)]
    pub less_verbose: bool,
    /// Do not print each bench's report.
    #[arg(long)]
    pub hide_results: bool,
    /// Print the summary even with `--less-verbose`.
    #[arg(long)]
    pub show_summary: bool,
    /// When the run fails because of its results.
    #[command(flatten)]
    pub gate: Gate,
    /// Write a flame graph of each bench (`<bench>.svg` beside the results file).
    #[arg(long)]
    pub instruction_tracing: bool,
    /// Print where each bench's instructions went.
    #[arg(long)]
    pub breakdown: bool,
    /// The metering profile: pocketic-13 (canbench 0.7's PocketIC 13, the default) or current
    /// (master-2026, its former name, is accepted). Results under another profile than the
    /// default do not compare with canbench's.
    #[arg(long, value_name = "PROFILE", default_value_t = Metering::PocketIc13,
          value_parser = args::metering)]
    pub metering: Metering,
    /// canbench checks its PocketIC binary's hash; icrun has none: accepted and ignored.
    #[arg(long, hide = true)]
    pub no_runtime_integrity_check: bool,
    /// canbench's PocketIC binary: refused, icrun runs no PocketIC (always `None`).
    #[arg(long, hide = true, value_name = "PATH", value_parser = refuse_runtime_path)]
    pub runtime_path: Option<PathBuf>,
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
            metering: Metering::PocketIc13,
            no_runtime_integrity_check: false,
            runtime_path: None,
        }
    }
}

impl BenchOptions {
    /// Parses the arguments after `bench`. Flags taking a value accept
    /// `--flag VALUE` and `--flag=VALUE`.
    pub fn parse(args: &[String]) -> Result<BenchOptions, String> {
        args::parse("bench", args)
    }

    /// Whether bench `name` is selected by the pattern.
    pub fn selects(&self, name: &str) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|p| name.contains(p.as_str()))
    }
}

const FAIL_ON_REGRESSION: &str = "fail_on_regression";
const FAIL_ON_CHANGE: &str = "fail_on_change";

/// The gate is two flags that exclude each other.
impl Args for Gate {
    fn augment_args(command: Command) -> Command {
        command
            .arg(
                Arg::new(FAIL_ON_REGRESSION)
                    .long("fail-on-regression")
                    .action(ArgAction::SetTrue)
                    .conflicts_with(FAIL_ON_CHANGE)
                    .help("Exit with 1 when a bench's instructions regressed beyond the noise threshold"),
            )
            .arg(
                Arg::new(FAIL_ON_CHANGE)
                    .long("fail-on-change")
                    .action(ArgAction::SetTrue)
                    .help("Exit with 1 when anything differs from the results file beyond the noise threshold, or a bench is new or missing"),
            )
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl FromArgMatches for Gate {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(if matches.get_flag(FAIL_ON_CHANGE) {
            Gate::Change
        } else if matches.get_flag(FAIL_ON_REGRESSION) {
            Gate::Regression
        } else {
            Gate::Off
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!("needs a non-negative percentage, not {text:?}")),
    }
}

fn refuse_runtime_path(_: &str) -> Result<PathBuf, String> {
    Err("a PocketIC feature icrun does not provide".into())
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
        // canbench's defaults: PocketIC 13's metering, a 2% noise threshold.
        assert_eq!(BenchOptions::default().metering, Metering::PocketIc13);
        assert_eq!(BenchOptions::default().noise_threshold, 2.0);
        let regression = parse(&["--fail-on-regression", "--less-verbose", "--hide-results"]);
        let regression = regression.expect("valid");
        assert_eq!(regression.gate, Gate::Regression);
        assert!(regression.less_verbose && regression.hide_results);
        let canbench = parse(&["--show-summary", "--show-canister-output"]).expect("valid");
        assert!(canbench.show_summary && canbench.show_canister_output);
        assert!(parse(&["--no-runtime-integrity-check"]).is_ok());
    }

    #[test]
    fn errors() {
        assert!(parse(&["--noise-threshold"]).is_err());
        assert!(parse(&["--noise-threshold", "-1"]).is_err());
        assert!(parse(&["--noise-threshold", "two"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["a", "b"]).is_err());
        assert!(parse(&["--fail-on-change", "--fail-on-regression"]).is_err());
        assert!(parse(&["--runtime-path", "pocket-ic"]).is_err());
        assert!(parse(&["--metering", "mainnet"]).is_err());
    }
}
