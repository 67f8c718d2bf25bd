//! The outside world: outbound mail (and, later, SMS and webhooks).

pub mod mail;
