//! tern-catalog's tests: layers, order and progressive disclosure.
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod builtin_disclosure;
mod disclosure_tools;
mod layers;
mod order_and_disclosure;
