//! The cache of access tokens whose signature was already checked
//! (`tokens.verified_cache_entries`), which `http::bearer` reads before an ES256 verification
//! and fills after one. Held by the application (`App::verified_tokens`), so it lives below
//! both the application and the HTTP layer.

use std::sync::Arc;

use tessera_actors::{
    tenant::{
        keys::{AccessClaims, TokenKeys},
        messages::Bearer,
    },
    TenantHandle,
};
use tessera_storage::TenantId;

/// An access token that passed `http::bearer::verify_any`: what a repeat of it needs, and what it
/// was checked against.
pub struct Verified {
    pub(crate) tenant: TenantId,
    /// The slug its `iss` was checked against.
    pub(crate) slug: String,
    /// The key set it was verified with. Held, so a later set is never at the same address;
    /// a rotation publishes a new set, and the token is checked again once.
    pub(crate) keys: Arc<TokenKeys>,
    pub(crate) claims: AccessClaims,
    pub(crate) bearer: Bearer,
}

/// Access tokens already verified, keyed by the SHA-256 of the exact token. Bounded (the
/// least useful entries go first); an entry counts only for its tenant, while that tenant
/// publishes the same key set, and until the token's `exp`. Whether the session is still alive
/// is not cached: every command taking a [`Bearer`] asks the tenant's actor.
pub struct VerifiedTokens(Option<quick_cache::sync::Cache<[u8; 32], Arc<Verified>>>);

impl VerifiedTokens {
    /// Room for `entries` tokens; 0 turns the cache off.
    pub fn new(entries: u64) -> Self {
        let entries = usize::try_from(entries).unwrap_or(usize::MAX);
        VerifiedTokens((entries > 0).then(|| quick_cache::sync::Cache::new(entries)))
    }

    pub(crate) fn get(
        &self,
        digest: &[u8; 32],
        tenant: &TenantHandle,
        keys: &Arc<TokenKeys>,
        now: i64,
    ) -> Option<Arc<Verified>> {
        let cache = self.0.as_ref()?;
        let hit = cache.get(digest)?;
        if hit.tenant == tenant.id
            && hit.slug == tenant.slug
            && Arc::ptr_eq(&hit.keys, keys)
            && now < hit.claims.exp
        {
            return Some(hit);
        }
        if now >= hit.claims.exp {
            cache.remove(digest);
        }
        None
    }

    pub(crate) fn insert(&self, digest: [u8; 32], verified: Verified) {
        if let Some(cache) = &self.0 {
            cache.insert(digest, Arc::new(verified));
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
