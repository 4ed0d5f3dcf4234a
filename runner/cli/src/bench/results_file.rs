//! `canbench_results.yml`: the committed baseline, in canbench's exact format
//! (docs/metering.md §9): a `benches` map by name (sorted), each with `total`
//! and `scopes`, then the `version` of canbench that wrote it.

use super::measurement::BenchResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The canbench version written to results files: icrun reproduces canbench
/// 0.7 (docs/metering.md §9), so canbench 0.7 and later read them.
pub const CANBENCH_VERSION: &str = "0.7.0";

/// Results by bench name, sorted.
pub type Results = BTreeMap<String, BenchResult>;

/// The file's content, keys in canbench's order.
#[derive(Debug, Serialize, Deserialize)]
struct Persisted {
    benches: Results,
    version: String,
}

/// Reads a results file; a missing file means no earlier results.
pub fn read(path: &Path) -> Result<Results, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Results::new()),
        Err(e) => return Err(format!("cannot read results file {}: {e}", path.display())),
    };
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses the text of a results file.
pub fn parse(text: &str) -> Result<Results, String> {
    let persisted: Persisted =
        serde_yaml::from_str(text).map_err(|e| format!("invalid results file: {e}"))?;
    Ok(persisted.benches)
}

/// The text canbench writes for `benches`.
pub fn render(benches: &Results) -> Result<String, String> {
    let persisted = Persisted {
        benches: benches.clone(),
        version: CANBENCH_VERSION.to_string(),
    };
    serde_yaml::to_string(&persisted).map_err(|e| format!("cannot encode results: {e}"))
}

/// Writes `benches` to `path` in canbench's format.
pub fn write(path: &Path, benches: &Results) -> Result<(), String> {
    let text = render(benches)?;
    std::fs::write(path, text)
        .map_err(|e| format!("cannot write results file {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Measurement;

    const EXPECTED: &str = "\
benches:
  fib_20:
    total:
      calls: 1
      instructions: 729
      heap_increase: 0
      stable_memory_increase: 0
    scopes: {}
  with_scope:
    total:
      calls: 1
      instructions: 5000
      heap_increase: 1
      stable_memory_increase: 2
    scopes:
      load:
        calls: 3
        instructions: 1200
        heap_increase: 0
        stable_memory_increase: 0
version: 0.7.0
";

    fn sample() -> Results {
        let mut results = Results::new();
        results.insert(
            "with_scope".into(),
            BenchResult {
                total: Measurement {
                    calls: 1,
                    instructions: 5000,
                    heap_increase: 1,
                    stable_memory_increase: 2,
                },
                scopes: [(
                    "load".to_string(),
                    Measurement {
                        calls: 3,
                        instructions: 1200,
                        ..Measurement::default()
                    },
                )]
                .into(),
            },
        );
        results.insert(
            "fib_20".into(),
            BenchResult {
                total: Measurement {
                    calls: 1,
                    instructions: 729,
                    ..Measurement::default()
                },
                scopes: BTreeMap::new(),
            },
        );
        results
    }

    #[test]
    fn renders_canbench_format() {
        assert_eq!(render(&sample()).expect("renders"), EXPECTED);
        assert_eq!(parse(EXPECTED).expect("parses"), sample());
    }

    #[test]
    fn reads_older_files() {
        // Files of canbench < 0.2 have only `instructions` and no scopes.
        let old = "benches:\n  a:\n    total:\n      instructions: 7\nversion: 0.1.5\n";
        let results = parse(old).expect("parses");
        assert_eq!(results["a"].total.instructions, 7);
        assert_eq!(results["a"].total.calls, 0);
        assert!(read(Path::new("/nonexistent/results.yml"))
            .expect("missing is empty")
            .is_empty());
        assert!(parse("benches: [").is_err());
    }
}
