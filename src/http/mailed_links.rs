//! The tenant a mailed link's token names. Link and challenge tokens begin with their
//! tenant's id (`challenges::tenant_of_token`), so the pages the links open (the hosted pages
//! of `hosted.rs`, an agent's request link, a guardian's links) find it without a key.
//!
//! Its own file: the floor those pages share.

use tessera_actors::{tenant::challenges::tenant_of_token, TenantHandle};
use tessera_storage::TenantId;

use super::error::len_between;
use crate::app::AppState;

/// The tenant `token` names: a token of 1 to 512 characters whose tenant this server knows
/// (whether it is served here is the page's to ask: a page answers the cluster's refusal, a
/// guardian's link counts as unknown).
pub fn tenant_of_link(state: &AppState, token: &str) -> Option<TenantHandle> {
    if !len_between(token, 1, 512) {
        return None;
    }
    tenant_of_token(token).and_then(|id| state.directory.tenant_by_id(TenantId(id)))
}
