//! The bash command classifier (see issue 5).
