//! Native tests of both engines: model-based property tests and targeted cases.

mod engines;
mod harness;
mod model;
mod properties;
