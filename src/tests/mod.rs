//! Native tests of every engine: model-based property tests and targeted cases.

mod engines;
mod harness;
mod layout;
mod page_tree;
mod properties;
mod stable_sqlite;
