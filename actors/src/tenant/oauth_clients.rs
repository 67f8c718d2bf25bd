//! The tenant's OAuth clients: the relying parties (web apps, native apps, tools such as
//! Grafana) that its authorization server will answer. Owners register, change, delete and
//! re-key them on the dashboard; the operator attests third-party ones with the admin CLI.
//!
//! A confidential client's secret is random (32 bytes), shown once and kept as its SHA-256
//! (a high-entropy secret needs no slow hash; the comparison is in constant time). Public
//! clients (single-page and native apps) have none and authenticate with PKCE alone.
//! Agents are clients too, registered through their own endpoint; the `client_type` field
//! leaves room for them.
//!
//! Its parts, one job a file: `records.rs` (a client as stored, its type and secret
//! method), `published.rs` (the registry as the HTTP edge reads it, and client
//! authentication), `registry.rs` (what owners and the operator do with clients) and
//! `commands.rs` (`OAuthClientCmd`, its answers and its dispatch).

mod error;
pub mod memory;

mod commands;
mod published;
mod records;
mod registry;

pub use self::{
    commands::{OAuthClientAnswer, OAuthClientCmd},
    published::PublishedClients,
    records::{ClientType, OAuthClientProfile, OAuthClientRecord, TokenAuthMethod},
    registry::{
        IssuedClient, NewOAuthClient, OAuthClientPatch, MAX_DYNAMIC_CLIENTS, MAX_OAUTH_CLIENTS,
    },
};
pub use error::OAuthClientError;

#[cfg(test)]
mod tests;
