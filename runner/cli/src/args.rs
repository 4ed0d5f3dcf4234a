//! Parsing one subcommand's arguments with clap, for the option types of `icrun call`,
//! `icrun bench` and `icrun speed` (which derive [`clap::Args`]), and the value parsers
//! they share.

use clap::{Args, Command, FromArgMatches};
use icrun::Metering;

/// Parses `args`, the arguments after the subcommand `command`, as `T`'s options. The error
/// is clap's message (usage errors, and the help text for `--help`).
pub fn parse<T: Args + FromArgMatches>(
    command: &'static str,
    args: &[String],
) -> Result<T, String> {
    let matches = T::augment_args(Command::new(command))
        .try_get_matches_from(std::iter::once(command.to_string()).chain(args.iter().cloned()))
        .map_err(|e| e.render().to_string())?;
    T::from_arg_matches(&matches).map_err(|e| e.render().to_string())
}

/// A metering profile by its command-line name (or a former name, e.g. `master-2026` for
/// `current`).
pub fn metering(name: &str) -> Result<Metering, String> {
    Metering::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Metering::ALL.iter().map(|m| m.name()).collect();
        format!(
            "unknown metering profile {name:?} (one of {})",
            known.join(", ")
        )
    })
}

/// A number greater than zero.
pub fn positive(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("needs a positive number, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_parsers() {
        assert_eq!(metering("current"), Ok(Metering::Current));
        assert_eq!(metering("master-2026"), Ok(Metering::Current));
        assert_eq!(metering("pocketic-13"), Ok(Metering::PocketIc13));
        let unknown = metering("mainnet").expect_err("unknown");
        assert!(unknown.contains("pocketic-13, current"), "{unknown}");
        assert_eq!(positive("3"), Ok(3));
        assert!(positive("0").is_err() && positive("-1").is_err() && positive("x").is_err());
    }
}
