//! The preloaded tables the benchmarks run on, and where each lives in stable memory.
//!
//! Every table holds the ids 0, 10, 20, …, 10 × (rows − 1), each with a 100-byte username, so
//! ids ending in 5 are free "middle" ids and ids from 10 × rows on are free "append" ids. The
//! 1,000,000-row tables sit exactly where the canisters keep theirs (`userstore::layout`); the
//! smaller ones, for the table-size comparison, use memories the canisters leave free.

use ic_stable_structures::memory_manager::MemoryId;
use userstore::limits::MAX_BATCH_SIZE;
use userstore::{layout, StoreError, User, UserStore};

/// Bytes of every preloaded username (the published benchmark's shape).
pub const USERNAME_BYTES: usize = 100;

/// How the preloaded usernames are ordered, as the results files record it ([`scrambled`]).
pub const USERNAME_ORDER: &str = "unrelated to the ids";

/// Distance between two consecutive preloaded ids.
pub const ID_STEP: u64 = 10;

/// The sizes of preloaded table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableSize {
    /// 10,000 rows.
    Rows10k,
    /// 100,000 rows.
    Rows100k,
    /// 1,000,000 rows.
    Rows1m,
}

impl TableSize {
    /// Every size, smallest first.
    pub const ALL: [TableSize; 3] = [Self::Rows10k, Self::Rows100k, Self::Rows1m];

    /// Rows in the table.
    pub fn rows(self) -> u64 {
        match self {
            Self::Rows10k => 10_000,
            Self::Rows100k => 100_000,
            Self::Rows1m => 1_000_000,
        }
    }

    /// The short name used in bench names and seeding calls.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rows10k => "10k",
            Self::Rows100k => "100k",
            Self::Rows1m => "1m",
        }
    }

    /// Parses [`TableSize::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|size| size.name() == name)
    }

    /// The virtual memory of this size's B-tree.
    pub fn btree_memory_id(self) -> MemoryId {
        match self {
            Self::Rows1m => layout::BTREE_USERS_MEMORY_ID,
            Self::Rows100k => MemoryId::new(3),
            Self::Rows10k => MemoryId::new(4),
        }
    }

    /// The virtual memory this size's SQLite database file is mounted on.
    pub fn sqlite_memory_id(self) -> MemoryId {
        match self {
            Self::Rows1m => layout::SQLITE_DATABASE_MEMORY_ID,
            Self::Rows100k => MemoryId::new(5),
            Self::Rows10k => MemoryId::new(6),
        }
    }

    /// The virtual memory of this size's stable-memory SQLite database (`StableSqliteStore`).
    pub fn stable_sqlite_memory_id(self) -> MemoryId {
        match self {
            Self::Rows1m => layout::STABLE_SQLITE_DATABASE_MEMORY_ID,
            Self::Rows100k => MemoryId::new(8),
            Self::Rows10k => MemoryId::new(9),
        }
    }

    /// The virtual memory of this size's page tree (ids the canisters leave free: the
    /// page-tree canister keeps its table in a region instead).
    pub fn page_tree_memory_id(self) -> MemoryId {
        match self {
            Self::Rows1m => MemoryId::new(20),
            Self::Rows100k => MemoryId::new(21),
            Self::Rows10k => MemoryId::new(22),
        }
    }

    /// The name this size's stable-memory SQLite database is registered under with the VFS.
    pub fn stable_sqlite_name(self) -> &'static str {
        match self {
            // The name the stable-memory SQLite canister registers its database under.
            Self::Rows1m => "users.db",
            Self::Rows100k => "users-100k.db",
            Self::Rows10k => "users-10k.db",
        }
    }

    /// The path of this size's SQLite database file.
    pub fn sqlite_path(self) -> &'static str {
        match self {
            // Where the SQLite canister keeps its database file
            // (`userstore::sqlite::stable_memory::DATABASE_PATH`).
            Self::Rows1m => "/userstore/users.db",
            Self::Rows100k => "/userstore/users-100k.db",
            Self::Rows10k => "/userstore/users-10k.db",
        }
    }
}

/// The preloaded user with this id: a username of exactly [`USERNAME_BYTES`] bytes, its own
/// (usernames are unique), in an order unrelated to the ids ([`scrambled`]).
pub fn preloaded_user(id: u64) -> User {
    User::new(
        id,
        format!(
            "user-{:0>width$}",
            scrambled(id),
            width = USERNAME_BYTES - 5
        ),
    )
}

/// The user with this id renamed: another username of exactly [`USERNAME_BYTES`] bytes, its
/// own, never a preloaded user's (its prefix differs).
pub fn renamed_user(id: u64) -> User {
    User::new(
        id,
        format!(
            "renamed-{:0>width$}",
            scrambled(id),
            width = USERNAME_BYTES - 8
        ),
    )
}

/// `id` mixed into a number whose order says nothing of the id's, one to one (so that two
/// ids never share a name): the finalizer of the SplitMix64 generator, an invertible
/// sequence of xor-shifts and odd multiplications.
///
/// Why: real usernames do not follow the order users joined in. Names that did (the id
/// zero-padded) would keep the names of a batch of neighbouring ids next to each other in
/// an index ordered by name (SQLite's, redb's), and every batch would touch a few index
/// pages instead of one per name.
pub fn scrambled(id: u64) -> u64 {
    let mut mixed = id;
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mixed ^ (mixed >> 31)
}

/// The preloaded users at positions `from..from + count` (ids `position × ID_STEP`).
pub fn preloaded_users(from: u64, count: u64) -> Vec<User> {
    (from..from + count)
        .map(|position| preloaded_user(position * ID_STEP))
        .collect()
}

/// Inserts the preloaded users at positions `from..from + count` of `size`'s table into
/// `store`, in batches of the library's largest size: how every bench canister's `seed`
/// update fills its tables for `bench-snapshot`.
pub fn insert_preloaded(
    store: &mut dyn UserStore,
    size: TableSize,
    from: u64,
    count: u64,
) -> Result<(), StoreError> {
    let end = from.saturating_add(count).min(size.rows());
    let mut position = from;
    while position < end {
        let batch = (end - position).min(MAX_BATCH_SIZE as u64);
        store.insert_batch(&preloaded_users(position, batch))?;
        position += batch;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_are_unique_and_their_order_is_unrelated_to_the_ids() {
        let ids: Vec<u64> = (0..20_000u64).map(|position| position * ID_STEP).collect();
        let mut names: Vec<String> = ids
            .iter()
            .flat_map(|id| [preloaded_user(*id).username, renamed_user(*id).username])
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 2 * ids.len(), "every name its own");
        // Names in id order rise about half the time, as a random order's would (the ids
        // zero-padded rose every time).
        let rises = ids
            .windows(2)
            .filter(|pair| preloaded_user(pair[0]).username < preloaded_user(pair[1]).username)
            .count();
        let share = rises as f64 / (ids.len() - 1) as f64;
        assert!((0.45..0.55).contains(&share), "{share}");
        // A batch of 1,000 neighbouring ids lands all over the name order.
        let mut all: Vec<String> = ids.iter().map(|id| preloaded_user(*id).username).collect();
        all.sort();
        let batch: Vec<usize> = ids[5_000..6_000]
            .iter()
            .map(|id| {
                all.binary_search(&preloaded_user(*id).username)
                    .unwrap_or(0)
            })
            .collect();
        let spread = batch.iter().max().unwrap_or(&0) - batch.iter().min().unwrap_or(&0);
        assert!(spread > ids.len() * 9 / 10, "{spread}");
    }

    #[test]
    fn usernames_have_the_published_length() {
        assert_eq!(preloaded_user(0).username.len(), USERNAME_BYTES);
        assert_eq!(renamed_user(0).username.len(), USERNAME_BYTES);
        assert_ne!(renamed_user(7).username, preloaded_user(7).username);
        assert_eq!(preloaded_user(9_999_990).username.len(), USERNAME_BYTES);
        assert_eq!(preloaded_user(u64::MAX).username.len(), USERNAME_BYTES);
    }

    #[test]
    fn sizes_round_trip_their_names_and_use_distinct_memories() {
        for size in TableSize::ALL {
            assert_eq!(TableSize::from_name(size.name()), Some(size));
        }
        let mut ids: Vec<MemoryId> = TableSize::ALL
            .iter()
            .flat_map(|size| {
                [
                    size.btree_memory_id(),
                    size.sqlite_memory_id(),
                    size.stable_sqlite_memory_id(),
                    size.page_tree_memory_id(),
                ]
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 12);
        let file_system: Vec<MemoryId> =
            layout::FILE_SYSTEM_MEMORY_IDS.map(MemoryId::new).collect();
        assert!(ids.iter().all(|id| !file_system.contains(id)));
        assert!(!ids.contains(&layout::SETTINGS_MEMORY_ID));
    }
}
