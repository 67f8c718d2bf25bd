//! Why a node does not serve a tenant: what the membership answers and the HTTP edge turns
//! into a 503. Its own file, below both the membership (`mod.rs`) and its etcd side.

/// Why this node does not serve a tenant now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Another node holds the tenant's lease: its advertised URL.
    Elsewhere(String),
    /// No node is known to hold it: its owner has just stopped and nobody took it yet, or
    /// this node has lost etcd and serves nothing until it has a lease again.
    Unowned,
}
