//! Native tests of every engine: model-based property tests and targeted cases.

mod engines;
mod harness;
mod model;
mod properties;
mod stable_sqlite;
