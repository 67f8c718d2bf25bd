//! The API's shapes: JSON bodies the server answers, declared once with `Serialize` and
//! `Deserialize`, so that what an actor answers, the HTTP response, its OpenAPI schema and
//! what the tests and the benchmark read back are one type.
//!
//! A crate of its own because every layer uses it and it uses none of them: the actors
//! (which know nothing of HTTP) answer these types, the binary serves them, and the tests
//! read them. The OpenAPI schema derive is behind the `schema` feature, which only the binary
//! enables; names and doc comments are the document's schema names and descriptions.

mod guardian;
mod users;
mod webhooks;

pub use guardian::ConsentReceipt;
pub use users::{ManagedUser, User, UserStatus};
pub use webhooks::WebhookEndpoint;
