//! The tenant's clients as the HTTP edge reads them, replaced whole after every change, and
//! the one rule of client authentication the token, revocation and introspection endpoints
//! apply.

use std::{collections::HashMap, sync::Arc};

use tessera_storage::TenantStore;

use super::records::{ClientType, OAuthClientRecord, TokenAuthMethod};
use crate::{
    error::TenantError,
    tenant::oauth::{ClientAuth, OAuthFailure},
};

/// The tenant's clients as the HTTP edge reads them
/// ([`crate::tenant::runtime::TenantCells`]): the actor publishes a new set after every
/// change to the registry.
#[derive(Debug, Default)]
pub struct PublishedClients(HashMap<String, Arc<OAuthClientRecord>>);

impl PublishedClients {
    /// Every client of `store`.
    pub fn load(store: &TenantStore) -> Result<Self, TenantError> {
        let mut map = HashMap::new();
        for item in store.scan::<OAuthClientRecord>(b"") {
            let (_, c) = item?;
            map.insert(c.client_id.clone(), Arc::new(c));
        }
        Ok(PublishedClients(map))
    }

    pub fn get(&self, client_id: &str) -> Option<&Arc<OAuthClientRecord>> {
        self.0.get(client_id)
    }

    /// The client presenting `auth`, if it is who it says: a confidential client with its
    /// secret by a method it takes ([`OAuthClientRecord::takes_method`]), a public client
    /// with none and no secret. The token, revocation and introspection endpoints all ask
    /// here.
    pub fn authenticate(&self, auth: &ClientAuth) -> Result<Arc<OAuthClientRecord>, OAuthFailure> {
        let client = self
            .get(&auth.client_id)
            .ok_or(OAuthFailure::InvalidClient)?;
        let ok = match client.profile.client_type {
            ClientType::Confidential => {
                client.takes_method(auth.method)
                    && auth
                        .secret
                        .as_deref()
                        .is_some_and(|s| client.secret_matches(s))
            }
            ClientType::Public => auth.method == TokenAuthMethod::None && auth.secret.is_none(),
        };
        if ok {
            Ok(client.clone())
        } else {
            Err(OAuthFailure::InvalidClient)
        }
    }
}
