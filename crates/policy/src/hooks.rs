//! Hook commands (see issue 5).
