//! `icrun bench`: a drop-in for `canbench` (docs/metering.md §9) on icrun.
//!
//! - [`config`] reads `canbench.yml`;
//! - [`measurement`] holds canbench's `BenchResult` (Candid in, YAML out);
//! - [`results_file`] reads and writes `canbench_results.yml` in canbench's format;
//! - [`run`] builds, installs and runs every `__canbench__*` query;
//! - [`compare`] pairs new results with the old ones and classifies each change;
//! - [`report`], [`summary`], [`table`] and [`csv`] print what canbench prints;
//! - [`gate`] decides the exit status (`--fail-on-regression`, `--fail-on-change`);
//! - [`options`] parses the command line.

pub mod compare;
pub mod config;
pub mod csv;
pub mod format;
pub mod gate;
pub mod measurement;
pub mod options;
pub mod report;
pub mod results_file;
pub mod run;
pub mod style;
pub mod summary;
pub mod table;

pub use measurement::{BenchResult, Measurement};
pub use options::BenchOptions;
pub use run::{run, Outcome};
