//! Shared application state handed to handlers, modelled on axum's `State`.
//!
//! Give the value once to [`ServerBuilder::with_state`](crate::ServerBuilder::with_state);
//! handlers then take it as a [`State<T>`] parameter before their arguments
//! (`handler` on tools, prompts, resources and templates, `completion` for
//! completion; see [`FromContext`](crate::FromContext)) or read it with
//! [`RequestContext::app_state`]. Nothing has to be cloned into closures, so
//! no `move` closure and no `Arc` juggling:
//!
//! ```
//! use ferromcp_server::{Server, State, tool, RequestContext};
//! use std::sync::Arc;
//!
//! struct Db { greeting: String }
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet { name: String }
//!
//! let server = Server::builder("demo", "1.0.0")
//!     .with_state(Arc::new(Db { greeting: "Hello".into() }))
//!     .tool(tool("greet").description("Greets someone").handler(
//!         |State(db): State<Arc<Db>>, a: Greet, _cx: RequestContext| async move {
//!             format!("{}, {}!", db.greeting, a.name)
//!         },
//!     ))
//!     .build()
//!     .expect("every State<T> a handler takes was given to with_state");
//! # let _ = server;
//! ```
//!
//! A handler taking a `State<T>` whose `T` was never given is a
//! configuration error reported by [`ServerBuilder::build`](crate::ServerBuilder::build)
//! (or by `Server::add_tool` and friends at run time), not a failure at call
//! time. State is looked up by type: use one type per value (wrap it in a
//! newtype to hold two values of the same type).
//!
//! A handler may take up to three extractors (several `State<T>`s, each
//! checked at build); a `#[tool]`/`#[prompt]`/`#[resource]` function may
//! take any number, and a handler reads further ones with
//! [`RequestContext::app_state`].

use crate::error::{Error, HandlerError};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// Extractor for application state registered with
/// [`ServerBuilder::with_state`](crate::ServerBuilder::with_state).
///
/// `T` is cloned out of the server for each call, so make it cheap to clone
/// (an `Arc`, a pool handle, …). Destructure it in the parameter list:
/// `|State(db): State<Arc<Db>>, args: Args, cx: RequestContext| …`.
///
/// ```
/// use ferromcp_server::State;
/// let State(n) = State(3_u32);
/// assert_eq!(n, 3);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State<T>(pub T);

/// The type map of application state values.
pub(crate) type StateMap = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// A state type a handler needs: checked against the server's state when
/// the handler is registered. (Public only because the hidden methods of
/// the handler traits name it; it cannot be named outside this crate.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateNeed {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
}

impl StateNeed {
    pub(crate) fn of<T: 'static>() -> Self {
        Self {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }

    /// A configuration error unless `map` holds this type.
    pub(crate) fn check(&self, map: &StateMap, what: &str) -> Result<(), Error> {
        if map.contains_key(&self.id) {
            Ok(())
        } else {
            Err(Error::config(format!(
                "{what} takes State<{}> but the server has no such state \
                 (call ServerBuilder::with_state with a value of that type)",
                self.name
            )))
        }
    }
}

/// Clones the state value of type `T` out of `map`.
pub(crate) fn lookup<T: Clone + 'static>(map: &StateMap) -> Option<T> {
    map.get(&TypeId::of::<T>())
        .and_then(|v| v.downcast_ref::<T>())
        .cloned()
}

/// The error for a state type missing at call time (only reachable when
/// the registration check was bypassed).
pub(crate) fn missing<T>() -> HandlerError {
    HandlerError::Protocol(ferromcp_protocol::ErrorObject::internal(format!(
        "no application state of type {}",
        std::any::type_name::<T>()
    )))
}

/// Macro support: a handler definition that reads more `State<T>`s than
/// the one its builder call declared, declaring them for the registration
/// check.
#[doc(hidden)]
pub trait NeedsState: Sized {
    /// Adds `T` to the state types checked at registration.
    fn needs_state<T: 'static>(self) -> Self;
}

// The capability files implement it for their definitions with this
// macro (the trait is defined here; the definitions are theirs).
macro_rules! needs_state {
    ($($t:ty),*) => {$(
        impl crate::state::NeedsState for $t {
            fn needs_state<T: 'static>(mut self) -> Self {
                self.state_needs.push(crate::state::StateNeed::of::<T>());
                self
            }
        }
    )*};
}
pub(crate) use needs_state;
