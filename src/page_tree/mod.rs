//! [`PageTreeStore`]: the user table as a B+tree shaped for the IC's current meter, its
//! leaves whole 64 KiB Wasm pages of stable memory and its one level of keys in the heap.
//!
//! # Why
//! Under the IC's current meter every 64 KiB page of heap or stable memory a message
//! touches costs 80,000 instructions, and 80,000 more if the message writes it
//! (docs/metering.md §6): a one-row call is mostly pages (`docs/floor.md` works out the
//! fewest any engine can touch). A `StableBTreeMap` reads one node per level, each on its
//! own page (seven levels at 1,000,000 rows); SQLite reads pages of 4 KiB through a cache
//! spread over the heap. Here a lookup is:
//! - the index, in the heap: the lowest id of each leaf, binary-searched (no stable read);
//! - one leaf, one Wasm page of stable memory, binary-searched through its slots with reads
//!   of a few bytes ([`leaf`]).
//!
//! A write writes that one leaf. A leaf holds about 600 users of 100-byte names; when it is
//! full it splits in two (an insert above every id leaves the old leaf full and starts a new
//! one), and the index, kept on pages of its own, is written then: once every few hundred
//! inserts. A delete that leaves a leaf less than a quarter full merges it with a neighbour,
//! or shares their users evenly when both do not fit one page.
//!
//! # Atomicity
//! A batch is checked whole before its first write (an existing id to insert, a missing id
//! to update or delete), so a call that fails changes nothing. Past the checks only a full
//! stable memory can fail a write; in a canister that traps, and the IC discards the
//! message's every write (docs/metering.md §7). Natively there is no such rollback.
//!
//! # The row count
//! The count lives in the heap. [`PageTreeStore::close`] (before an upgrade) writes it to the
//! header, marked exact; the next open uses it and marks it stale. If an upgrade skipped
//! `pre_upgrade`, the open counts the rows, one leaf header at a time.

mod engine;
mod leaf;
mod meta;
mod page;

pub use engine::PageTreeConfig;

use crate::error::StoreError;
use crate::limits;
use crate::store::UserStore;
use crate::user::{User, UsernameBuf};
use ic_stable_structures::Memory;
use leaf::{Leaf, Record, Room};
use meta::{Index, Meta};
use page::PAGE_BYTES;

/// A leaf with fewer live bytes than this after a delete is merged or rebalanced with a
/// neighbour.
const UNDERFULL_BYTES: usize = PAGE_BYTES / 4;

/// Two leaves whose users take at most this many bytes together merge into one.
const MERGE_BYTES: usize = PAGE_BYTES * 3 / 4;

/// The user table as a B+tree of 64 KiB pages in any ic-stable-structures [`Memory`].
pub struct PageTreeStore<M: Memory> {
    memory: M,
    meta: Meta,
    index: Index,
    rows: u64,
}

/// Where an id is: the index position of its leaf, the leaf, and its slot in the leaf (`Ok`)
/// or where it would go (`Err`).
type Located<'a, M> = (usize, Leaf<'a, M>, Result<usize, usize>);

impl<M: Memory> PageTreeStore<M> {
    /// Opens the table in `memory`, or creates an empty one in empty memory. Refuses memory
    /// that holds something else, writing nothing.
    pub fn open(memory: M) -> Result<Self, StoreError> {
        let opened = Meta::open(&memory)?;
        let mut store = PageTreeStore {
            memory,
            meta: opened.meta,
            index: opened.index,
            rows: 0,
        };
        store.rows = match opened.rows {
            Some(rows) => rows,
            None => store.count_rows()?,
        };
        // From now on writes change the count: the header's is exact again only at close.
        Meta::write_rows(&store.memory, None);
        Ok(store)
    }

    /// Writes the row count to the header, so the next open need not count the rows.
    pub fn close(self) -> Result<(), StoreError> {
        Meta::write_rows(&self.memory, Some(self.rows));
        Ok(())
    }

    /// The rows of every leaf, counted from their headers.
    fn count_rows(&self) -> Result<u64, StoreError> {
        (0..self.index.len())
            .map(|position| self.leaf_at(position).map(|leaf| leaf.count() as u64))
            .sum()
    }

    /// The leaf at index `position`.
    fn leaf_at(&self, position: usize) -> Result<Leaf<'_, M>, StoreError> {
        let page = self
            .index
            .page(position)
            .ok_or_else(|| StoreError::storage("reading the page tree", "no such leaf"))?;
        Leaf::load(&self.memory, page)
    }

    /// The leaf that holds (or would hold) `id`, its index position, and where `id` is in it.
    fn find(&self, id: u64) -> Result<Option<Located<'_, M>>, StoreError> {
        let Some((position, page)) = self.index.leaf_for(id) else {
            return Ok(None);
        };
        let leaf = Leaf::load(&self.memory, page)?;
        let found = leaf.search(id)?;
        Ok(Some((position, leaf, found)))
    }

    /// Whether `id` is in the table.
    fn contains(&self, id: u64) -> Result<bool, StoreError> {
        Ok(matches!(self.find(id)?, Some((_, _, Ok(_)))))
    }

    /// Inserts the user `id` with `username`; [`StoreError::DuplicateId`] if the id exists.
    fn insert_bytes(&mut self, id: u64, username: &[u8]) -> Result<(), StoreError> {
        if self.index.is_empty() {
            let page = self.meta.allocate(&self.memory, 0)?;
            Leaf::create(&self.memory, page);
            self.index.insert(0, 0, page);
            self.meta.write_index(&self.memory, &self.index, 0)?;
        }
        let (position, page) = self
            .index
            .leaf_for(id)
            .ok_or_else(|| StoreError::storage("inserting a user", "no leaf"))?;
        let mut leaf = Leaf::load(&self.memory, page)?;
        let at = match leaf.search(id)? {
            Ok(_) => return Err(StoreError::DuplicateId { id }),
            Err(at) => at,
        };
        match leaf.room_for(username.len()) {
            Room::Free => leaf.insert(at, id, username),
            Room::AfterRepack => leaf.repack()?.insert(at, id, username),
            Room::None if position + 1 == self.index.len() && at == leaf.count() => {
                // Above every id: the full leaf stays as it is, a new one starts.
                let new_page = self.meta.allocate(&self.memory, self.index.len())?;
                Leaf::create(&self.memory, new_page).insert(0, id, username);
                self.index.insert(position + 1, id, new_page);
                self.meta
                    .write_index(&self.memory, &self.index, position + 1)?;
            }
            Room::None => {
                // Half the users move to a new leaf after this one; the user goes into
                // whichever of the two holds its id.
                let new_page = self.meta.allocate(&self.memory, self.index.len())?;
                let mut upper = Leaf::create(&self.memory, new_page);
                let first = leaf.move_upper_half(&mut upper)?;
                let target = if id >= first { upper } else { leaf };
                let at = target.search(id)?.unwrap_or_else(|at| at);
                match target.room_for(username.len()) {
                    Room::Free => {
                        let mut target = target;
                        target.insert(at, id, username)
                    }
                    _ => target.repack()?.insert(at, id, username),
                }
                self.index.insert(position + 1, first, new_page);
                self.meta
                    .write_index(&self.memory, &self.index, position + 1)?;
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// Removes `id` from the table, its username into `removed`; [`StoreError::NotFound`] if
    /// absent.
    fn remove_into(&mut self, id: u64, removed: &mut UsernameBuf) -> Result<(), StoreError> {
        let (position, mut leaf, at) = match self.find(id)? {
            Some((position, leaf, Ok(at))) => (position, leaf, at),
            _ => return Err(StoreError::NotFound { id }),
        };
        leaf.remove(at, removed)?;
        let (count, live, page) = (leaf.count(), leaf.live_bytes(), leaf.page());
        self.rows -= 1;
        if self.index.len() > 1 {
            if count == 0 {
                self.index.remove(position);
                self.meta.free(&self.memory, page, self.index.len());
                self.meta.write_index(&self.memory, &self.index, position)?;
            } else if live < UNDERFULL_BYTES {
                self.rebalance(position)?;
            }
        }
        Ok(())
    }

    /// Merges the underfull leaf at `position` with a neighbour, or shares their users evenly
    /// when they do not fit one page.
    fn rebalance(&mut self, position: usize) -> Result<(), StoreError> {
        let left = if position + 1 < self.index.len() {
            position
        } else {
            position - 1
        };
        let (left_leaf, right_leaf) = (self.leaf_at(left)?, self.leaf_at(left + 1)?);
        let (left_page, right_page) = (left_leaf.page(), right_leaf.page());
        let mut records = left_leaf.records()?;
        records.extend(right_leaf.records()?);
        let bytes: usize = records
            .iter()
            .map(|record| leaf::footprint(record.username.len()))
            .sum();
        if bytes <= MERGE_BYTES {
            Leaf::rewrite(&self.memory, left_page, &records);
            self.index.remove(left + 1);
            self.meta.free(&self.memory, right_page, self.index.len());
            return self.meta.write_index(&self.memory, &self.index, left + 1);
        }
        let upper = records.split_off(half_by_bytes(&records));
        Leaf::rewrite(&self.memory, left_page, &records);
        Leaf::rewrite(&self.memory, right_page, &upper);
        self.index.set_key(left + 1, upper[0].id);
        self.meta.write_index(&self.memory, &self.index, left + 1)
    }

    /// Gives `id` the username `username`, the one it had into `previous`.
    fn rename_into(
        &mut self,
        id: u64,
        username: &[u8],
        previous: &mut UsernameBuf,
    ) -> Result<(), StoreError> {
        let (mut leaf, at) = match self.find(id)? {
            Some((_, leaf, Ok(at))) => (leaf, at),
            _ => return Err(StoreError::NotFound { id }),
        };
        leaf.username_into(at, previous)?;
        if !leaf.overwrite(at, username)? {
            // Longer than before: out of the leaf, and in again as an insert would.
            leaf.remove(at, &mut UsernameBuf::default())?;
            self.rows -= 1;
            self.insert_bytes(id, username)?;
        }
        Ok(())
    }
}

/// Where to cut `records` so that both halves take about as many bytes.
fn half_by_bytes(records: &[Record]) -> usize {
    let total: usize = records
        .iter()
        .map(|record| leaf::footprint(record.username.len()))
        .sum();
    let mut taken = 0;
    for (index, record) in records.iter().enumerate() {
        taken += leaf::footprint(record.username.len());
        if taken * 2 >= total {
            return (index + 1).clamp(1, records.len() - 1);
        }
    }
    records.len() / 2
}

/// A record as a user.
fn to_user(record: Record) -> Result<User, StoreError> {
    let username = String::from_utf8(record.username)
        .map_err(|_| StoreError::storage("reading a user", "a stored username is not UTF-8"))?;
    Ok(User {
        id: record.id,
        username,
    })
}

impl<M: Memory> UserStore for PageTreeStore<M> {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        self.insert_parts(user.id, &user.username)
    }

    fn insert_parts(&mut self, id: u64, username: &str) -> Result<(), StoreError> {
        limits::check_id(id)?;
        limits::check_username(username)?;
        self.insert_bytes(id, username.as_bytes())
    }

    fn get_into(&self, id: u64, username: &mut UsernameBuf) -> Result<(), StoreError> {
        match self.find(id)? {
            Some((_, leaf, Ok(at))) => leaf.username_into(at, username),
            _ => Err(StoreError::NotFound { id }),
        }
    }

    fn update_into(
        &mut self,
        id: u64,
        username: &str,
        previous: &mut UsernameBuf,
    ) -> Result<(), StoreError> {
        limits::check_username(username)?;
        self.rename_into(id, username.as_bytes(), previous)
    }

    fn delete_into(&mut self, id: u64, deleted: &mut UsernameBuf) -> Result<(), StoreError> {
        self.remove_into(id, deleted)
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        // Every check before the first write: the first id, in batch order, already there.
        for user in users {
            if self.contains(user.id)? {
                return Err(StoreError::DuplicateId { id: user.id });
            }
        }
        // In id order, so that the users of one leaf go in together.
        let mut order: Vec<&User> = users.iter().collect();
        order.sort_unstable_by_key(|user| user.id);
        for user in order {
            self.insert_bytes(user.id, user.username.as_bytes())?;
        }
        Ok(users.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        let mut username = UsernameBuf::default();
        self.get_into(id, &mut username)?;
        Ok(User::new(id, username.as_str()))
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        limits::check_page_size(limit)?;
        let start = match after {
            None => 0,
            Some(id) => match id.checked_add(1) {
                Some(next) => next,
                None => return Ok(Vec::new()),
            },
        };
        let Some((mut position, leaf, found)) = self.find(start)? else {
            return Ok(Vec::new());
        };
        let mut at = found.unwrap_or_else(|insert_at| insert_at);
        let mut leaf = leaf;
        let mut users = Vec::new();
        while users.len() < limit as usize {
            if at < leaf.count() {
                users.push(to_user(leaf.record(at)?)?);
                at += 1;
                continue;
            }
            position += 1;
            if position == self.index.len() {
                break;
            }
            leaf = self.leaf_at(position)?;
            at = 0;
        }
        Ok(users)
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        let mut previous = UsernameBuf::default();
        self.update_into(id, username, &mut previous)?;
        Ok(User::new(id, previous.as_str()))
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        let mut deleted = UsernameBuf::default();
        self.delete_into(id, &mut deleted)?;
        Ok(User::new(id, deleted.as_str()))
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        for user in users {
            if !self.contains(user.id)? {
                return Err(StoreError::NotFound { id: user.id });
            }
        }
        let mut previous = UsernameBuf::default();
        for user in users {
            self.rename_into(user.id, user.username.as_bytes(), &mut previous)?;
        }
        Ok(users.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        for id in ids {
            if !self.contains(*id)? {
                return Err(StoreError::NotFound { id: *id });
            }
        }
        let mut removed = UsernameBuf::default();
        for id in ids {
            self.remove_into(*id, &mut removed)?;
        }
        Ok(ids.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    fn user(id: u64) -> User {
        User::new(id, format!("user-{id:0>95}"))
    }

    #[test]
    fn a_million_rows_in_random_order_fill_leaves_and_reopen() {
        let memory = VectorMemory::default();
        let mut store = PageTreeStore::open(memory.clone()).unwrap();
        // A permutation of 0..100,000 (7,919 is prime to it), in batches.
        let ids: Vec<u64> = (0..100_000u64).map(|i| i * 7_919 % 100_000 * 10).collect();
        for batch in ids.chunks(5_000) {
            let users: Vec<User> = batch.iter().map(|id| user(*id)).collect();
            assert_eq!(store.insert_batch(&users), Ok(5_000));
        }
        assert_eq!(store.count(), Ok(100_000));
        let bytes_per_row = memory.size() as f64 * 65_536.0 / 100_000.0;
        assert!(bytes_per_row < 200.0, "{bytes_per_row}");
        store.close().unwrap();
        let store = PageTreeStore::open(memory.clone()).unwrap();
        assert_eq!(store.count(), Ok(100_000));
        assert_eq!(store.get(123_450), Ok(user(123_450)));
        assert_eq!(
            store.get(123_455),
            Err(StoreError::NotFound { id: 123_455 })
        );
        let page = store.page(Some(999_950), 10).unwrap();
        assert_eq!(
            page,
            vec![user(999_960), user(999_970), user(999_980), user(999_990)]
        );
        // Without a close the count is counted again.
        drop(store);
        assert_eq!(PageTreeStore::open(memory).unwrap().count(), Ok(100_000));
    }

    #[test]
    fn appends_leave_full_leaves() {
        let memory = VectorMemory::default();
        let mut store = PageTreeStore::open(memory.clone()).unwrap();
        for start in (0..50_000u64).step_by(1_000) {
            let users: Vec<User> = (start..start + 1_000).map(user).collect();
            store.insert_batch(&users).unwrap();
        }
        let per_leaf = (PAGE_BYTES - 16) / leaf::footprint(100);
        let leaves = 50_000usize.div_ceil(per_leaf);
        assert_eq!(store.index.len(), leaves);
    }

    #[test]
    fn deletes_merge_leaves_and_give_pages_back() {
        let memory = VectorMemory::default();
        let mut store = PageTreeStore::open(memory.clone()).unwrap();
        let users: Vec<User> = (0..10_000u64).map(user).collect();
        store.insert_batch(&users).unwrap();
        let leaves = store.index.len();
        let ids: Vec<u64> = (0..10_000u64).filter(|id| id % 10 != 0).collect();
        for batch in ids.chunks(1_000) {
            store.delete_batch(batch).unwrap();
        }
        assert_eq!(store.count(), Ok(1_000));
        // Leaves stay at least a quarter full: 111 KB of users in 17 leaves became at most 8.
        assert!(
            store.index.len() <= leaves / 2,
            "{} of {leaves}",
            store.index.len()
        );
        assert_eq!(store.page(None, 10_000).unwrap().len(), 1_000);
        for id in (0..10_000u64).step_by(10) {
            assert_eq!(store.get(id), Ok(user(id)));
        }
        // Freed pages are used again before the memory grows.
        let size = memory.size();
        store
            .insert_batch(&(20_000..25_000u64).map(user).collect::<Vec<_>>())
            .unwrap();
        assert_eq!(memory.size(), size);
    }

    #[test]
    fn a_longer_name_moves_its_user_and_a_full_leaf_splits() {
        let memory = VectorMemory::default();
        let mut store = PageTreeStore::open(memory).unwrap();
        let short: Vec<User> = (0..700u64).map(|id| User::new(id, "s")).collect();
        store.insert_batch(&short).unwrap();
        assert_eq!(store.index.len(), 1);
        for id in 0..700u64 {
            let long = "l".repeat(128);
            assert_eq!(
                store.update_username(id, &long),
                Ok(User::new(id, "s")),
                "{id}"
            );
        }
        assert!(store.index.len() > 1);
        assert_eq!(store.count(), Ok(700));
        assert_eq!(store.get(699), Ok(User::new(699, "l".repeat(128))));
    }

    #[test]
    fn memory_holding_something_else_is_refused_and_left_as_it_was() {
        let memory = VectorMemory::default();
        memory.grow(1);
        memory.write(0, b"SQLite format 3");
        assert!(PageTreeStore::open(memory.clone()).is_err());
        let mut kept = [0; 15];
        memory.read(0, &mut kept);
        assert_eq!(&kept, b"SQLite format 3");
    }
}
