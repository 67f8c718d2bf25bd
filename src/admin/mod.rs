//! The admin surface: a Unix socket (`<data_dir>/admin.sock`, mode 0600, the local security
//! boundary) that takes one JSON request per connection and answers one JSON line. The server
//! side calls the same `App` operations, and so the same actor messages, as HTTP does.

pub mod client;
pub mod protocol;
pub mod server;
