//! Permissions: whether this call, with these arguments, runs.
//!
//! The catalog decides what the model may propose; this crate decides
//! whether a proposed call runs, is asked about, or is refused — and says
//! why. It holds the permission modes and rules ([`rules`]), the decision
//! engine ([`engine`]), the bash command classifier ([`bash`]) and the
//! runner for external hook commands ([`hooks`]). Nothing here renders or
//! asks: the runtime installs the policy in the loop's hooks and the front
//! end answers questions.

#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod bash;
pub mod engine;
pub mod hooks;
pub mod hosts;
mod reach;
pub mod rules;
