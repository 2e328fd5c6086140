//! What the program around the MCP client lends every server's
//! configuration (the driving program that hosts SDK servers, whoever
//! fills forms): shared, and compared by identity, so a [`crate::ServerConfig`]
//! stays `Clone`, `Debug` and `Eq`.

use std::sync::Arc;

/// A shared part of the program around the client.
pub struct Host<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for Host<T> {
    fn clone(&self) -> Self {
        Host(self.0.clone())
    }
}

impl<T: ?Sized> std::fmt::Debug for Host<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Host")
    }
}

impl<T: ?Sized> PartialEq for Host<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T: ?Sized> Eq for Host<T> {}
