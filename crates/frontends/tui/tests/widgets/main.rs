//! Widget tests: rendered buffers as insta snapshots at widths 40, 80 and
//! 120, and key handling through the public API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approval_sizes;
mod composer;
mod permission;
mod picker;
mod question;
mod status;
mod support;
mod tiny_areas;
mod todo;
mod vim;
