//! Black-box tests against the real `tessera` binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use tessera_testkit::stub;

mod accounts;
mod agents;
mod anonymous;
mod backup;
mod browser;
mod capacity;
mod catalog;
mod console;
mod cors;
mod crash;
mod dashboard;
mod dashboard_mfa;
mod dashboard_pages;
mod docs;
mod eudi;
mod faults;
mod fuzz_seeds;
mod guardian;
mod hosted;
mod hygiene;
mod management_keys;
mod master_key;
mod members;
mod metrics;
mod mfa;
mod network;
mod oauth;
mod oauth_browser;
mod oauth_clients;
mod onboarding;
mod outbox;
mod passkeys;
mod passwordless;
mod platform;
mod recovery;
mod recovery_inventory;
mod sdk_policy;
mod settings;
mod shared_networks;
mod sms;
mod social;
mod social_signin;
mod stepup;
mod tenants;
mod throttles;
mod tokens;
mod users;
mod walks;
mod watchdog;
mod webhooks;
