//! What both SQLite engines share: the table and its SQL ([`SqlTable`]), the statements
//! prepared at open, the typed configuration ([`SqliteConfig`]) and its pragmas, the
//! process-wide page-cache hook ([`page_cache`]) and SQLite's randomness in a canister
//! ([`randomness`]). Each engine opens a connection on its own
//! storage (ic-wasi-polyfill's file system, or this crate's VFS over stable memory) and
//! hands it to [`SqlTable::open`].

mod config;
pub mod page_cache;
mod pragmas;
pub mod randomness;
mod statements;
mod table;

pub use config::{JournalMode, LockingMode, SqliteConfig, Synchronous};
pub use table::{RowCountSlot, SqlTable};

/// Implements [`UserStore`](crate::UserStore) for a store type whose field `$field` is a
/// [`SqlTable`], by passing every call on.
macro_rules! delegate_user_store {
    ($store:ty, $field:ident) => {
        impl $crate::store::UserStore for $store {
            fn insert(&mut self, user: $crate::User) -> Result<(), $crate::StoreError> {
                self.$field.insert(user)
            }

            fn insert_batch(&mut self, users: &[$crate::User]) -> Result<u64, $crate::StoreError> {
                self.$field.insert_batch(users)
            }

            fn get(&self, id: u64) -> Result<$crate::User, $crate::StoreError> {
                self.$field.get(id)
            }

            fn get_by_name(&self, username: &str) -> Result<$crate::User, $crate::StoreError> {
                self.$field.get_by_name(username)
            }

            fn ids_named(
                &self,
                username: &str,
                limit: usize,
            ) -> Result<Vec<u64>, $crate::StoreError> {
                self.$field.ids_named(username, limit)
            }

            fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, $crate::StoreError> {
                self.$field.shared_usernames(limit)
            }

            fn page(
                &self,
                after: Option<u64>,
                limit: u32,
            ) -> Result<Vec<$crate::User>, $crate::StoreError> {
                self.$field.page(after, limit)
            }

            fn update_username(
                &mut self,
                id: u64,
                username: &str,
            ) -> Result<$crate::User, $crate::StoreError> {
                self.$field.update_username(id, username)
            }

            fn delete(&mut self, id: u64) -> Result<$crate::User, $crate::StoreError> {
                self.$field.delete(id)
            }

            fn update_batch(&mut self, users: &[$crate::User]) -> Result<u64, $crate::StoreError> {
                self.$field.update_batch(users)
            }

            fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, $crate::StoreError> {
                self.$field.delete_batch(ids)
            }

            fn count(&self) -> Result<u64, $crate::StoreError> {
                self.$field.count()
            }
        }
    };
}
pub(crate) use delegate_user_store;
