//! The outside world: outbound mail and text messages (and, later, webhooks).
//!
//! - `mail`: the lettre transport (SMTP or a file outbox) and the message encoding;
//! - `templates`: the words of each end-user message;
//! - `postman`: the worker that delivers tenants' queued mail with retries;
//! - `retry`: the one retry loop (permits, backoff, give-up) of the postman and the courier;
//! - `backlog`: the messages each of them holds, for de-duplication and the metrics;
//! - `outbox`: reads the file outbox back for the admin CLI;
//! - `sms`: the text message providers, their courier and their outbox.

pub mod backlog;
pub mod mail;
pub mod outbox;
pub mod postman;
pub mod retry;
pub mod sms;
pub mod templates;
