//! The user table in a redb database file: a peer measured beside userstore's engines on the
//! edge (a `wasi:http/proxy` component, the file under a preopened `/data`).
//!
//! One table `users: u64 -> &str`, its by-name index `users_by_name: &str -> u64` (a
//! multimap, changed in the same write transaction: usernames are unique, every write checks
//! the name), `shared_usernames: &str -> ()` (the names several users shared in a file
//! written before names were unique, recorded when its index was built at the open), and
//! `userstore_meta: &str -> &str` recording `engine = "Redb"`, so a file of another engine is
//! refused. Every write call is one write transaction committed with redb's default
//! durability (`Durability::Immediate`: durable when the call returns); every read is one
//! read transaction.

mod counting;
mod store;

pub use counting::CountingBackend;
pub use store::{RedbStore, ENGINE_NAME};
