//! Embedding tern in another Rust program: tools of your own and
//! extensions, given to the [`crate::RuntimeBuilder`].
//!
//! - [`crate::RuntimeBuilder::tool`] adds an SDK tool (a [`RuntimeTool`]):
//!   after the built-ins, or in place of the built-in of the same name.
//! - [`crate::RuntimeBuilder::extension`] adds an [`Extension`]: tools (the
//!   first registration of a name wins; a built-in's name is refused with a
//!   warning), slash commands (prompt templates, like custom commands), a
//!   check before each call (which may block it) and after it (which may add
//!   to the result), and every event of every run.
//!
//! The policy judges these tools like any other: an SDK or extension tool is
//! asked about unless an allow rule covers it (`Overrides::allowed_tools`).
//!
//! ```no_run
//! # async fn demo(tool: tern_agent_loop::RuntimeTool) -> Result<(), Box<dyn std::error::Error>> {
//! let overrides = tern_runtime::Overrides { allowed_tools: vec!["word_count".into()], ..Default::default() };
//! let runtime = tern_runtime::RuntimeBuilder::new(overrides)?.tool(tool).build().await?;
//! let events: tern_agent_loop::EventSink = std::sync::Arc::new(|e| println!("{e:?}"));
//! let report = runtime.prompt("count the words in README.md", &events).await?;
//! println!("{}", report.outcome.final_text);
//! runtime.shutdown().await;
//! # Ok(()) }
//! ```

use tern_agent_loop::{RuntimeTool, ToolCallResult};
use tern_protocol::{AgentEvent, ToolCall};

pub use tern_config::commands::ExtensionCommand;

/// An extension: every method has a default that does nothing.
pub trait Extension: Send + Sync {
    /// Its id (shown as the source of its tools).
    fn id(&self) -> &str;

    /// Tools it adds.
    fn tools(&self) -> Vec<RuntimeTool> {
        Vec::new()
    }

    /// Slash commands it adds.
    fn commands(&self) -> Vec<ExtensionCommand> {
        Vec::new()
    }

    /// Before a call the policy let through: `Some(reason)` blocks it (the
    /// reason goes to the model).
    fn before_tool_call(&self, _call: &ToolCall) -> Option<String> {
        None
    }

    /// After a call: may change the result the model gets.
    fn after_tool_call(&self, _call: &ToolCall, _result: &mut ToolCallResult) {}

    /// Every event of every run, as it happens.
    fn on_event(&self, _event: &AgentEvent) {}
}
