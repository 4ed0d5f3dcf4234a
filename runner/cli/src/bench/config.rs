//! `canbench.yml`: what to build, which Wasm to install and where results go
//! (docs/metering.md §9).

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The configuration file canbench reads when none is named.
pub const DEFAULT_CONFIG_FILE: &str = "canbench.yml";
/// The environment variable canbench reads the configuration file's name from.
pub const CONFIG_FILE_ENV: &str = "CANBENCH_CFG_FILE";
/// Results file when `results_path` is absent.
pub const DEFAULT_RESULTS_FILE: &str = "canbench_results.yml";
/// CSV file when `csv_results_path` is absent.
pub const DEFAULT_CSV_RESULTS_FILE: &str = "canbench_results.csv";

/// The file as written; unknown keys are ignored, as canbench does.
#[derive(Debug, Deserialize)]
struct RawConfig {
    build_cmd: Option<String>,
    wasm_path: String,
    results_path: Option<String>,
    csv_results_path: Option<String>,
    init_args: Option<HexArgument>,
    stable_memory: Option<FileReference>,
    env_vars: Option<FileReference>,
}

#[derive(Debug, Deserialize)]
struct HexArgument {
    hex: String,
}

#[derive(Debug, Deserialize)]
struct FileReference {
    file: String,
}

/// A parsed `canbench.yml`, paths resolved against the directory it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchConfig {
    /// Directory of the configuration file: `build_cmd` runs there.
    pub dir: PathBuf,
    /// Shell command that builds the Wasm, if any.
    pub build_cmd: Option<String>,
    /// The benchmark canister's Wasm (`.gz` is decompressed).
    pub wasm_path: PathBuf,
    /// The YAML results file compared against and written by `--persist`.
    pub results_path: PathBuf,
    /// The CSV file written by `--csv`.
    pub csv_results_path: PathBuf,
    /// Install argument bytes (`init_args.hex` decoded; empty when absent, as canbench sends).
    pub init_args: Vec<u8>,
    /// Raw stable memory image loaded after install.
    pub stable_memory_file: Option<PathBuf>,
    /// canbench's `env_vars.file` (canister environment variables).
    pub env_vars_file: Option<PathBuf>,
}

impl BenchConfig {
    /// Parses the text of a configuration file that lives in `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<BenchConfig, String> {
        let raw: RawConfig = serde_yaml::from_str(text)
            .map_err(|e| format!("invalid canbench configuration: {e}"))?;
        let init_args = match raw.init_args {
            Some(arg) => hex::decode(arg.hex.trim())
                .map_err(|e| format!("invalid init_args hex value: {e}"))?,
            None => Vec::new(),
        };
        let path = |p: &str| dir.join(p);
        Ok(BenchConfig {
            dir: dir.to_path_buf(),
            build_cmd: raw.build_cmd.filter(|cmd| !cmd.trim().is_empty()),
            wasm_path: path(&raw.wasm_path),
            results_path: path(raw.results_path.as_deref().unwrap_or(DEFAULT_RESULTS_FILE)),
            csv_results_path: path(
                raw.csv_results_path
                    .as_deref()
                    .unwrap_or(DEFAULT_CSV_RESULTS_FILE),
            ),
            init_args,
            stable_memory_file: raw.stable_memory.map(|f| path(&f.file)),
            env_vars_file: raw.env_vars.map(|f| path(&f.file)),
        })
    }

    /// Reads and parses the configuration file at `path`.
    pub fn load(path: &Path) -> Result<BenchConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("configuration file not found: '{}'", path.display())
            }
            _ => format!("cannot read '{}': {e}", path.display()),
        })?;
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Self::parse(&text, &dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_config() {
        let text = "build_cmd: make\nwasm_path: out/b.wasm.gz\nresults_path: r.yml\n\
                    csv_results_path: r.csv\ninit_args:\n  hex: 4449444c0000\n\
                    stable_memory:\n  file: sm.bin\n";
        let config = BenchConfig::parse(text, Path::new("/d")).expect("valid");
        assert_eq!(config.build_cmd.as_deref(), Some("make"));
        assert_eq!(config.wasm_path, PathBuf::from("/d/out/b.wasm.gz"));
        assert_eq!(config.results_path, PathBuf::from("/d/r.yml"));
        assert_eq!(config.csv_results_path, PathBuf::from("/d/r.csv"));
        assert_eq!(config.init_args, b"DIDL\x00\x00");
        assert_eq!(config.stable_memory_file, Some(PathBuf::from("/d/sm.bin")));
    }

    #[test]
    fn defaults_and_errors() {
        let config = BenchConfig::parse("wasm_path: a.wasm", Path::new(".")).expect("valid");
        assert_eq!(config.init_args, Vec::<u8>::new());
        assert_eq!(config.results_path, PathBuf::from("./canbench_results.yml"));
        assert_eq!(
            config.csv_results_path,
            PathBuf::from("./canbench_results.csv")
        );
        assert!(config.build_cmd.is_none() && config.stable_memory_file.is_none());

        let bad_hex = "wasm_path: a.wasm\ninit_args:\n  hex: xyz\n";
        let error = BenchConfig::parse(bad_hex, Path::new(".")).expect_err("bad hex");
        assert!(error.contains("init_args"), "{error}");
        assert!(BenchConfig::parse("build_cmd: x", Path::new(".")).is_err());
        assert!(BenchConfig::parse("wasm_path: [", Path::new(".")).is_err());
        let missing = BenchConfig::load(Path::new("/nonexistent/canbench.yml"));
        assert!(missing.expect_err("missing").contains("not found"));
    }
}
