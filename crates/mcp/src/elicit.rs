//! Elicitation: a server asks the person for input in the middle of a tool
//! call (`elicitation/create`, a form of primitive fields). tern passes the
//! form to whoever can answer ([`Elicitor`]: the front end's person) and
//! declines when nobody can; URL elicitation is declined.

use futures::future::BoxFuture;
use serde_json::Value;

/// A form a server asks to have filled.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The server.
    pub server: String,
    /// What it asks, for the person.
    pub message: String,
    /// The fields: a JSON Schema object of primitive properties.
    pub schema: Value,
}

/// Who fills a form: the person, through the front end.
pub trait Elicitor: Send + Sync {
    /// The form's content (matching its schema), or None to decline.
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, Option<Value>>;
}

/// The [`Elicitor`] every server's configuration holds.
pub type ElicitHost = crate::host::Host<dyn Elicitor>;
