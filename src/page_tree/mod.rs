//! [`PageTreeStore`]: the user table as a B+tree shaped for the IC's current meter, its
//! leaves whole 64 KiB Wasm pages of stable memory and its index on two levels, the upper
//! one in the heap.
//!
//! # Why
//! Under the IC's current meter every 64 KiB page of heap or stable memory a message
//! touches costs 80,000 instructions, and 80,000 more if the message writes it
//! (docs/metering.md §6): a one-row call is mostly pages (`docs/floor.md` works out the
//! fewest any engine can touch). A `StableBTreeMap` reads one node per level, each on its
//! own page (seven levels at 1,000,000 rows); SQLite reads pages of 4 KiB through a cache
//! spread over the heap. Here a lookup is:
//! - the index ([`index`]): in a canister's heap, inside the store, the lowest id of each
//!   leaf while they fit there (about 1.1 million users of 100-byte names with their name
//!   index), binary-searched with no stable read; past that (and at any size when the table
//!   is opened per request), the lowest id of each index page in the heap, then one index
//!   page of stable memory, searched as a leaf is;
//! - one leaf, one Wasm page of stable memory, searched through its slots with reads of a
//!   few bytes, each probe where the id would lie if the leaf's keys were even ([`leaf`]).
//!
//! Opening reads the header and at most one index page, at any size; [`PerRequestPageTree`],
//! for a host that opens the table on every request, reads the header alone and searches the
//! index page in place at each lookup.
//!
//! A write writes that one leaf. A leaf holds about 600 users of 100-byte names; when it is
//! full it splits in two (an insert above every id moves an eighth of the last leaf to a new
//! one, so that a table filled in ascending order keeps room between its ids), and the index
//! is written then: once every few hundred inserts. A delete that leaves a leaf less than a
//! quarter full merges it with a neighbour, or shares their users evenly when both do not
//! fit one page.
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
mod group;
mod index;
mod leaf;
mod meta;
mod page;
mod search;
#[cfg(test)]
mod tests_support;

pub use engine::PageTreeConfig;

use crate::error::StoreError;
use crate::limits;
use crate::name_index::{self, KeyValues};
use crate::store::UserStore;
use crate::unique;
use crate::user::{User, UsernameBuf};
use ic_stable_structures::Memory;
use index::{Index, Pos};
use leaf::{Leaf, Record, Room};
use meta::Meta;
use page::PAGE_BYTES;

/// A leaf with fewer live bytes than this after a delete is merged or rebalanced with a
/// neighbour.
const UNDERFULL_BYTES: usize = PAGE_BYTES / 4;

/// Two leaves whose users take at most this many bytes together merge into one.
const MERGE_BYTES: usize = PAGE_BYTES * 3 / 4;

/// The user table as a B+tree of 64 KiB pages in any ic-stable-structures [`Memory`].
///
/// `HEAP_LEAVES` (the default, for a canister, which opens once per upgrade) holds a small
/// table's index of leaves in the heap, so that a lookup reads no index page; a host that
/// opens the table for every request uses [`PerRequestPageTree`] instead (`index`'s "Where
/// the small case is held"). Both read and write the same layout.
pub struct PageTreeStore<M: Memory, const HEAP_LEAVES: bool = true> {
    memory: M,
    meta: Meta,
    index: Index<HEAP_LEAVES>,
    rows: u64,
}

/// The page tree for a host that opens the table on every request (an edge host's fresh
/// instance per request, docs/edge.md): its heap holds only the upper level of the index at
/// any size, so an open decodes a few entries of the header instead of a group of thousands,
/// and a lookup searches its group in place.
pub type PerRequestPageTree<M> = PageTreeStore<M, false>;

/// Where an id is: the index position of its leaf, the leaf, and its slot in the leaf (`Ok`)
/// or where it would go (`Err`).
type Located<'a, M> = (Pos, Leaf<'a, M>, Result<usize, usize>);

/// Of a full last leaf, the share of its bytes that stays when an insert above every id
/// starts a new leaf: the rest moves to the new leaf, so a table filled in ascending order
/// keeps room in every leaf for inserts between its ids (a full leaf would split on each).
const APPEND_KEEP: (usize, usize) = (7, 8);

/// A split of a full leaf in the middle keeps half its bytes.
const SPLIT_KEEP: (usize, usize) = (1, 2);

impl<M: Memory> PageTreeStore<M> {
    /// Opens the table in `memory`, or creates an empty one in empty memory. Refuses memory
    /// that holds something else, writing nothing.
    pub fn open(memory: M) -> Result<Self, StoreError> {
        Self::open_held(memory)
    }
}

impl<M: Memory> PerRequestPageTree<M> {
    /// [`PageTreeStore::open`], for a host that opens the table on every request: reads the
    /// header alone, at any size (unless, as for [`PageTreeStore::open`], the header's row
    /// count is stale, when the rows are counted, or the table predates its name index, which
    /// is built once).
    pub fn open_per_request(memory: M) -> Result<Self, StoreError> {
        Self::open_held(memory)
    }
}

impl<M: Memory, const HEAP_LEAVES: bool> PageTreeStore<M, HEAP_LEAVES> {
    /// Opens the table with the index held as `HEAP_LEAVES` says.
    fn open_held(memory: M) -> Result<Self, StoreError> {
        let opened = Index::open(&memory)?;
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
        if !Meta::names_indexed(&store.memory) {
            store.build_name_index()?;
            Meta::mark_names_indexed(&store.memory);
        }
        Ok(store)
    }

    /// Writes the row count to the header, so the next open need not count the rows.
    pub fn close(self) -> Result<(), StoreError> {
        Meta::write_rows(&self.memory, Some(self.rows));
        Ok(())
    }

    /// The rows of every leaf, counted from their headers (and, in the leaf where the name
    /// index's entries start, by a search).
    fn count_rows(&self) -> Result<u64, StoreError> {
        let mut rows = 0;
        let mut at = self.index.first();
        while let Some(position) = at {
            let leaf = self.leaf_at(position)?;
            if leaf.count() > 0 && !name_index::is_row_key(leaf.id(leaf.count() - 1)?) {
                let names_from = leaf.search(name_index::FIRST_NAME_KEY)?;
                return Ok(rows + names_from.unwrap_or_else(|at| at) as u64);
            }
            rows += leaf.count() as u64;
            at = self.index.next(&self.memory, position)?;
        }
        Ok(rows)
    }

    /// Indexes the names of a table written before they were (or starts the index of an
    /// empty one), reading every row once.
    fn build_name_index(&mut self) -> Result<(), StoreError> {
        let mut rows = Vec::with_capacity(self.rows as usize);
        let mut after = None;
        loop {
            let page = self.page(after, limits::MAX_PAGE_SIZE)?;
            let Some(last) = page.last() else { break };
            after = Some(last.id);
            rows.extend(page.into_iter().map(|user| (user.id, user.username)));
        }
        if rows.is_empty() {
            name_index::create(self)
        } else {
            name_index::build(self, rows).map(drop)
        }
    }

    /// The leaf at index `position`.
    fn leaf_at(&self, position: Pos) -> Result<Leaf<'_, M>, StoreError> {
        let page = self
            .meta
            .leaf_page(self.index.page(&self.memory, position))?;
        Leaf::load(&self.memory, page)
    }

    /// The leaf that holds (or would hold) `id`, its index position, and where `id` is in it.
    fn find(&self, id: u64) -> Result<Option<Located<'_, M>>, StoreError> {
        let Some((position, page)) = self.index.leaf_for(&self.memory, id)? else {
            return Ok(None);
        };
        let leaf = Leaf::load(&self.memory, self.meta.leaf_page(page)?)?;
        let found = leaf.search(id)?;
        Ok(Some((position, leaf, found)))
    }

    /// [`PageTreeStore::find`] for a row: `None` for a key above every id.
    fn find_row(&self, id: u64) -> Result<Option<Located<'_, M>>, StoreError> {
        if !name_index::is_row_key(id) {
            return Ok(None);
        }
        self.find(id)
    }

    /// Whether `id` is in the table.
    fn has_row(&self, id: u64) -> Result<bool, StoreError> {
        Ok(matches!(self.find_row(id)?, Some((_, _, Ok(_)))))
    }

    /// Inserts the record `id` (a row's id, or a key of the name index) with `username` (its
    /// value); [`StoreError::DuplicateId`] if the key exists.
    fn insert_bytes(&mut self, id: u64, username: &[u8]) -> Result<(), StoreError> {
        if self.index.is_empty() {
            let page = self.meta.allocate(&self.memory, 0)?;
            Leaf::create(&self.memory, page);
            self.index
                .insert_first(&self.memory, &mut self.meta, page)?;
        }
        let (position, page) = self
            .index
            .leaf_for(&self.memory, id)?
            .ok_or_else(|| StoreError::storage("inserting a user", "no leaf"))?;
        let mut leaf = Leaf::load(&self.memory, self.meta.leaf_page(page)?)?;
        let at = match leaf.search(id)? {
            Ok(_) => return Err(StoreError::DuplicateId { id }),
            Err(at) => at,
        };
        match leaf.room_for(username.len()) {
            Room::Free => leaf.insert(at, id, username),
            Room::AfterRepack => leaf.repack()?.insert(at, id, username),
            Room::None => {
                // A new leaf after this one takes the upper part of its users: half, or
                // above every id an eighth (the ascending table's slack, APPEND_KEEP); the
                // user goes into whichever of the two holds its id.
                // Above every key of its kind: the last leaf, or the last of the rows.
                let last = match self.index.next(&self.memory, position)? {
                    None => true,
                    Some(next) => {
                        name_index::is_row_key(id)
                            && !name_index::is_row_key(self.index.key(&self.memory, next))
                    }
                };
                let keep = if last && at == leaf.count() {
                    APPEND_KEEP
                } else {
                    SPLIT_KEEP
                };
                let new_page = self.meta.allocate(&self.memory, self.index.len())?;
                let mut upper = Leaf::create(&self.memory, new_page);
                // A full leaf that holds rows and names splits between them, and the insert
                // starts again: the leaves of rows then end where the names begin, and
                // appends of rows find the last of them.
                let names_from = leaf
                    .search(name_index::FIRST_NAME_KEY)?
                    .unwrap_or_else(|at| at);
                if names_from > 0 && names_from < leaf.count() {
                    let first = leaf.move_from(&mut upper, names_from)?;
                    self.index.insert_after(
                        &self.memory,
                        &mut self.meta,
                        position,
                        first,
                        new_page,
                    )?;
                    return self.insert_bytes(id, username);
                }
                let first = leaf.move_upper_part(&mut upper, keep)?;
                let target = if id >= first { upper } else { leaf };
                let at = target.search(id)?.unwrap_or_else(|at| at);
                match target.room_for(username.len()) {
                    Room::Free => {
                        let mut target = target;
                        target.insert(at, id, username)
                    }
                    _ => target.repack()?.insert(at, id, username),
                }
                self.index
                    .insert_after(&self.memory, &mut self.meta, position, first, new_page)?;
            }
        }
        if name_index::is_row_key(id) {
            self.rows += 1;
        }
        Ok(())
    }

    /// Removes `id` from the table, its username into `removed`; [`StoreError::NotFound`] if
    /// absent.
    fn remove_into(&mut self, id: u64, removed: &mut UsernameBuf) -> Result<(), StoreError> {
        let (position, mut leaf, at) = match self.find_row(id)? {
            Some((position, leaf, Ok(at))) => (position, leaf, at),
            _ => return Err(StoreError::NotFound { id }),
        };
        leaf.remove(at, removed)?;
        let left = (leaf.count(), leaf.live_bytes(), leaf.page());
        self.rows -= 1;
        self.after_removal(position, left)
    }

    /// Removes the name index's entry `key`.
    fn remove_key(&mut self, key: u64) -> Result<(), StoreError> {
        let (position, mut leaf, at) = match self.find(key)? {
            Some((position, leaf, Ok(at))) => (position, leaf, at),
            _ => {
                return Err(StoreError::storage(
                    "removing an entry of the name index",
                    "no such entry",
                ))
            }
        };
        leaf.remove_record(at)?;
        let left = (leaf.count(), leaf.live_bytes(), leaf.page());
        self.after_removal(position, left)
    }

    /// Frees or rebalances the leaf at `position` after a removal left it empty or underfull:
    /// `left` is what the leaf has left (records, live bytes) and its page.
    fn after_removal(
        &mut self,
        position: Pos,
        (count, live, page): (usize, usize, page::PageNo),
    ) -> Result<(), StoreError> {
        if self.index.len() > 1 {
            if count == 0 {
                self.index.remove(&self.memory, &mut self.meta, position)?;
                self.meta.free(&self.memory, page, self.index.len());
            } else if live < UNDERFULL_BYTES {
                self.rebalance(position)?;
            }
        }
        Ok(())
    }

    /// Merges the underfull leaf at `position` with a neighbour, or shares their users evenly
    /// when they do not fit one page.
    fn rebalance(&mut self, position: Pos) -> Result<(), StoreError> {
        let (left, right) = match self.index.next(&self.memory, position)? {
            Some(next) => (position, next),
            None => match self.index.previous(&self.memory, position)? {
                Some(previous) => (previous, position),
                None => return Ok(()),
            },
        };
        let (left_leaf, right_leaf) = (self.leaf_at(left)?, self.leaf_at(right)?);
        let (left_page, right_page) = (left_leaf.page(), right_leaf.page());
        let mut records = left_leaf.records()?;
        records.extend(right_leaf.records()?);
        let bytes: usize = records
            .iter()
            .map(|record| leaf::footprint(record.username.len()))
            .sum();
        if bytes <= MERGE_BYTES {
            Leaf::rewrite(&self.memory, left_page, &records);
            self.index.remove(&self.memory, &mut self.meta, right)?;
            self.meta.free(&self.memory, right_page, self.index.len());
            return Ok(());
        }
        let upper = records.split_off(half_by_bytes(&records));
        Leaf::rewrite(&self.memory, left_page, &records);
        Leaf::rewrite(&self.memory, right_page, &upper);
        self.index
            .set_key(&self.memory, &mut self.meta, right, upper[0].id)
    }

    /// Gives `id` the username `username`, the one it had into `previous`.
    fn rename_into(
        &mut self,
        id: u64,
        username: &[u8],
        previous: &mut UsernameBuf,
    ) -> Result<(), StoreError> {
        let (mut leaf, at) = match self.find_row(id)? {
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

impl<M: Memory, const HEAP_LEAVES: bool> KeyValues for PageTreeStore<M, HEAP_LEAVES> {
    fn scan_entries(
        &self,
        from: u64,
        below: u64,
        visit: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        let Some((mut position, mut leaf, found)) = self.find(from)? else {
            return Ok(());
        };
        let mut at = found.unwrap_or_else(|insert_at| insert_at);
        let mut value = [0u8; leaf::MAX_VALUE_BYTES];
        loop {
            if at < leaf.count() {
                let key = leaf.id(at)?;
                if key >= below {
                    return Ok(());
                }
                let len = leaf.value_into(at, &mut value)?;
                if !visit(key, &value[..len]) {
                    return Ok(());
                }
                at += 1;
                continue;
            }
            // The index says where the next leaf starts: a range that ends before it reads
            // no more pages.
            let Some(next) = self.index.next(&self.memory, position)? else {
                return Ok(());
            };
            if self.index.key(&self.memory, next) >= below {
                return Ok(());
            }
            position = next;
            leaf = self.leaf_at(position)?;
            at = 0;
        }
    }

    fn put_entry(&mut self, key: u64, value: &[u8]) -> Result<(), StoreError> {
        self.insert_bytes(key, value)
    }

    fn delete_entry(&mut self, key: u64) -> Result<(), StoreError> {
        self.remove_key(key)
    }
}

impl<M: Memory, const HEAP_LEAVES: bool> PageTreeStore<M, HEAP_LEAVES> {
    /// Gives the row `id`, named `previous`, the name `username` (free: checked), and moves
    /// its name index entry.
    fn rename_checked(
        &mut self,
        id: u64,
        username: &str,
        previous: &mut UsernameBuf,
    ) -> Result<(), StoreError> {
        self.rename_into(id, username.as_bytes(), previous)?;
        name_index::remove(self, previous.as_str(), id)?;
        match name_index::add(self, username, id)? {
            Some(_) => Ok(()),
            None => Err(StoreError::storage("renaming a user", "the name was taken")),
        }
    }
}

impl<M: Memory, const HEAP_LEAVES: bool> UserStore for PageTreeStore<M, HEAP_LEAVES> {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        self.insert_parts(user.id, &user.username)
    }

    fn insert_parts(&mut self, id: u64, username: &str) -> Result<(), StoreError> {
        limits::check_id(id)?;
        limits::check_username(username)?;
        // The row first (an existing id is found before anything is written), then its
        // name; a taken name takes the row out again.
        self.insert_bytes(id, username.as_bytes())?;
        if name_index::add(self, username, id)?.is_none() {
            self.remove_into(id, &mut UsernameBuf::default())?;
            return Err(unique::taken(username));
        }
        Ok(())
    }

    fn get_into(&self, id: u64, username: &mut UsernameBuf) -> Result<(), StoreError> {
        match self.find_row(id)? {
            Some((_, leaf, Ok(at))) => leaf.username_into(at, username),
            _ => Err(StoreError::NotFound { id }),
        }
    }

    fn get_by_name(&self, username: &str) -> Result<User, StoreError> {
        self.get_id_by_name(username)
            .map(|id| User::new(id, username))
    }

    fn get_id_by_name(&self, username: &str) -> Result<u64, StoreError> {
        name_index::lowest_holder(self, username)?.ok_or_else(|| StoreError::UsernameNotFound {
            username: username.to_string(),
        })
    }

    fn ids_named(&self, username: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
        name_index::ids_named(self, username, limit)
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        match name_index::state(self)? {
            Some(state) => name_index::shared_usernames(self, state, limit),
            None => Ok(Vec::new()),
        }
    }

    fn contains(&self, id: u64) -> Result<bool, StoreError> {
        self.has_row(id)
    }

    fn update_into(
        &mut self,
        id: u64,
        username: &str,
        previous: &mut UsernameBuf,
    ) -> Result<(), StoreError> {
        limits::check_username(username)?;
        // Both checks before the first write.
        self.get_into(id, previous)?;
        if previous.as_str() == username {
            return Ok(());
        }
        if name_index::taken_by_other(self, username, id)? {
            return Err(unique::taken(username));
        }
        self.rename_checked(id, username, previous)
    }

    fn delete_into(&mut self, id: u64, deleted: &mut UsernameBuf) -> Result<(), StoreError> {
        self.remove_into(id, deleted)?;
        name_index::remove(self, deleted.as_str(), id)
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        // Every check before the first write: the first row, in batch order, that clashes.
        unique::check_insert_batch(self, users)?;
        // In key order, so that the records of one leaf go in together.
        let mut order: Vec<&User> = users.iter().collect();
        order.sort_unstable_by_key(|user| user.id);
        for user in &order {
            self.insert_bytes(user.id, user.username.as_bytes())?;
        }
        order.sort_by_cached_key(|user| name_index::bucket_of(&user.username));
        for user in order {
            if name_index::add(self, &user.username, user.id)?.is_none() {
                return Err(StoreError::storage("inserting a batch", "a name was taken"));
            }
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
        let Some((mut position, leaf, found)) = self.find_row(start)? else {
            return Ok(Vec::new());
        };
        let mut at = found.unwrap_or_else(|insert_at| insert_at);
        let mut leaf = leaf;
        let mut users = Vec::new();
        while users.len() < limit as usize {
            if at < leaf.count() {
                let record = leaf.record(at)?;
                if !name_index::is_row_key(record.id) {
                    break;
                }
                users.push(to_user(record)?);
                at += 1;
                continue;
            }
            match self.index.next(&self.memory, position)? {
                Some(next) => position = next,
                None => break,
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
        unique::check_update_batch(self, users)?;
        let mut previous = UsernameBuf::default();
        for user in users {
            self.get_into(user.id, &mut previous)?;
            if previous.as_str() != user.username {
                self.rename_checked(user.id, &user.username, &mut previous)?;
            }
        }
        Ok(users.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        for id in ids {
            if !self.has_row(*id)? {
                return Err(StoreError::NotFound { id: *id });
            }
        }
        let mut removed = UsernameBuf::default();
        for id in ids {
            self.delete_into(*id, &mut removed)?;
        }
        Ok(ids.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.rows)
    }
}

/// Writes `rows` into empty `memory` as the release before the by-name index did: rows only,
/// names shared or not (for tests of the index's build).
#[cfg(test)]
pub(crate) fn write_without_name_index<M: Memory + Clone>(memory: &M, rows: &[User]) {
    let opened = Index::open(memory).expect("a fresh store");
    let mut store: PageTreeStore<M> = PageTreeStore {
        memory: memory.clone(),
        meta: opened.meta,
        index: opened.index,
        rows: 0,
    };
    for user in rows {
        store
            .insert_bytes(user.id, user.username.as_bytes())
            .expect("a row");
    }
    store.close().expect("closes");
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    fn user(id: u64) -> User {
        User::new(id, format!("user-{id:0>95}"))
    }

    impl<M: Memory, const HEAP_LEAVES: bool> PageTreeStore<M, HEAP_LEAVES> {
        /// Leaves whose keys start below the name index's.
        fn row_leaves(&self) -> usize {
            let mut leaves = 0;
            let mut at = self.index.first();
            while let Some(position) = at {
                if !name_index::is_row_key(self.index.key(&self.memory, position)) {
                    break;
                }
                leaves += 1;
                at = self.index.next(&self.memory, position).unwrap();
            }
            leaves
        }
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
        // A row and its name entry, about 110 bytes each, in leaves filled at random.
        let bytes_per_row = memory.size() as f64 * 65_536.0 / 100_000.0;
        assert!(bytes_per_row < 400.0, "{bytes_per_row}");
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
    fn opened_per_request_the_table_reads_only_the_header_and_shares_the_layout() {
        use tests_support::PageCounter;
        let counter = PageCounter::new(VectorMemory::default());
        let mut held = PageTreeStore::open(counter.clone()).unwrap();
        let ids: Vec<u64> = (0..30_000u64).map(|i| i * 7_919 % 30_000 * 10).collect();
        for batch in ids.chunks(5_000) {
            let users: Vec<User> = batch.iter().map(|id| user(*id)).collect();
            held.insert_batch(&users).unwrap();
        }
        held.close().unwrap();

        counter.reset();
        let mut per_request = PerRequestPageTree::open_per_request(counter.clone()).unwrap();
        assert_eq!(counter.pages_read(), vec![0], "the header only");
        assert_eq!(per_request.count(), Ok(30_000));
        counter.reset();
        assert_eq!(per_request.get(12_340), Ok(user(12_340)));
        assert_eq!(counter.pages_read().len(), 2, "the group and the leaf");
        counter.reset();
        assert_eq!(
            per_request.get_by_name(&user(12_340).username),
            Ok(user(12_340))
        );
        assert_eq!(counter.pages_read().len(), 2, "the group and the leaf");

        // Its writes (splits and merges among them) are read by the heap-held index, and
        // the other way round.
        let more: Vec<User> = (0..3_000u64).map(|i| user(i * 100 + 5)).collect();
        assert_eq!(per_request.insert_batch(&more), Ok(3_000));
        let gone: Vec<u64> = (0..5_000u64).map(|i| i * 10).collect();
        assert_eq!(per_request.delete_batch(&gone), Ok(5_000));
        per_request.close().unwrap();
        let mut held = PageTreeStore::open(counter.clone()).unwrap();
        assert_eq!(held.count(), Ok(28_000));
        assert_eq!(held.get(205), Ok(user(205)));
        assert_eq!(held.get(40), Err(StoreError::NotFound { id: 40 }));
        assert_eq!(held.get(50_010), Ok(user(50_010)));
        held.insert(user(41)).unwrap();
        held.close().unwrap();
        let per_request = PerRequestPageTree::open_per_request(counter).unwrap();
        assert_eq!(per_request.get(41), Ok(user(41)));
        let all = per_request.page(None, 1_000).unwrap();
        assert_eq!(all[0], user(5));
        assert!(all.windows(2).all(|pair| pair[0].id < pair[1].id));
    }

    #[test]
    fn appends_leave_an_eighth_free_and_inserts_between_them_split_nothing() {
        let memory = VectorMemory::default();
        let mut store = PageTreeStore::open(memory.clone()).unwrap();
        for start in (0..50_000u64).step_by(1_000) {
            let users: Vec<User> = (start..start + 1_000).map(|i| user(i * 10)).collect();
            store.insert_batch(&users).unwrap();
        }
        let per_leaf = (PAGE_BYTES - 16) / leaf::footprint(100);
        let kept = per_leaf * APPEND_KEEP.0 / APPEND_KEEP.1;
        let leaves = store.row_leaves();
        assert!(
            leaves.abs_diff(50_000usize.div_ceil(kept)) <= 1,
            "{leaves} leaves of about {kept} users"
        );
        // An eighth of a leaf is room for dozens of users between the ids of every leaf.
        let between: Vec<User> = (0..50_000u64)
            .step_by(per_leaf)
            .flat_map(|i| (0..per_leaf as u64 / 20).map(move |k| user((i + k) * 10 + 5)))
            .collect();
        for batch in between.chunks(1_000) {
            store.insert_batch(batch).unwrap();
        }
        assert_eq!(store.row_leaves(), leaves, "no leaf of rows split");
        assert_eq!(store.count(), Ok(50_000 + between.len() as u64));
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
        let short: Vec<User> = (0..700u64)
            .map(|id| User::new(id, id.to_string()))
            .collect();
        store.insert_batch(&short).unwrap();
        assert_eq!(store.row_leaves(), 1);
        let long = |id: u64| format!("{id:l>128}");
        for id in 0..700u64 {
            assert_eq!(
                store.update_username(id, &long(id)),
                Ok(User::new(id, id.to_string())),
                "{id}"
            );
        }
        assert!(store.row_leaves() > 1);
        assert_eq!(store.count(), Ok(700));
        assert_eq!(store.get(699), Ok(User::new(699, long(699))));
        assert_eq!(store.get_by_name(&long(699)), Ok(User::new(699, long(699))));
        assert_eq!(
            store.get_by_name("699"),
            Err(StoreError::UsernameNotFound {
                username: "699".into()
            })
        );
    }

    /// The users of the layout-1 fixture: ids 3 × (0..20,000) but the first 1,000 multiples
    /// of 21, named "v1-{id}" (as the release before wrote them).
    fn layout_one_users() -> Vec<User> {
        (0..20_000u64)
            .filter(|i| i % 7 != 0 || *i >= 7_000)
            .map(|i| User::new(i * 3, format!("v1-{}", i * 3)))
            .collect()
    }

    #[test]
    fn a_store_of_layout_one_is_converted_at_its_open_and_keeps_every_row() {
        // Written by the release before (tests/fixtures/page_tree_layout1.bin).
        let image = include_bytes!("../../tests/fixtures/page_tree_layout1.bin");
        let memory = VectorMemory::default();
        memory.grow(image.len() as u64 / PAGE_BYTES as u64);
        memory.write(0, image);
        let mut version = [0; 4];
        memory.read(8, &mut version);
        assert_eq!(u32::from_le_bytes(version), 1, "the fixture is of layout 1");

        let mut store = PageTreeStore::open(memory.clone()).unwrap();
        let expected = layout_one_users();
        assert_eq!(store.count(), Ok(expected.len() as u64));
        let mut table = Vec::new();
        loop {
            let page = store
                .page(table.last().map(|u: &User| u.id), 10_000)
                .unwrap();
            if page.is_empty() {
                break;
            }
            table.extend(page);
        }
        assert_eq!(table, expected);
        memory.read(8, &mut version);
        assert_eq!(u32::from_le_bytes(version), 2, "converted");
        store.insert(User::new(1, "after")).unwrap();
        store.close().unwrap();
        let store = PageTreeStore::open(memory).unwrap();
        assert_eq!(store.count(), Ok(expected.len() as u64 + 1));
        assert_eq!(store.get(1), Ok(User::new(1, "after")));
        assert_eq!(store.get(59_997), Ok(User::new(59_997, "v1-59997")));
    }

    #[test]
    fn a_table_past_the_heaps_room_reads_one_index_page_more_per_call_and_opens_in_one_page() {
        use tests_support::PageCounter;
        let counter = PageCounter::new(VectorMemory::default());
        let mut store = PageTreeStore::open(counter.clone()).unwrap();
        let name = |id: u64| format!("{id:0>128}");
        // A permutation of 0..1,600,000 (1,600,000 = 2^9 × 5^5; 7,919 is prime to it): about
        // 6 leaves per 1,000 rows of 128-byte names and their name entries, past the
        // heap's INLINE_ENTRIES.
        let rows = 1_600_000u64;
        let mut small_get = None;
        for start in (0..rows).step_by(10_000) {
            let users: Vec<User> = (start..start + 10_000)
                .map(|i| i * 7_919 % rows * 10)
                .map(|id| User::new(id, name(id)))
                .collect();
            store.insert_batch(&users).unwrap();
            if start == 200_000 {
                counter.reset();
                store.get(users[0].id).unwrap();
                small_get = Some((counter.pages_read(), counter.pages_written()));
            }
        }
        let (read, written) = small_get.unwrap();
        assert_eq!(
            (read.len(), written.len()),
            (1, 0),
            "a small table's get: its leaf"
        );
        assert!(
            store.index.len() > group::INLINE_ENTRIES,
            "{}",
            store.index.len()
        );
        for id in (0..rows * 10).step_by(99_991 * 10) {
            counter.reset();
            assert_eq!(store.get(id), Ok(User::new(id, name(id))));
            assert_eq!(
                counter.pages_read().len(),
                2,
                "a get: the group and the leaf"
            );
            assert!(counter.pages_written().is_empty());
            counter.reset();
            assert_eq!(store.get_by_name(&name(id)), Ok(User::new(id, name(id))));
            assert_eq!(
                counter.pages_read().len(),
                2,
                "a get by name: the group and the leaf"
            );
            counter.reset();
            store.insert(User::new(id + 5, name(id + 5))).unwrap();
            let inserted = counter.pages_written();
            counter.reset();
            UserStore::delete(&mut store, id + 5).unwrap();
            let deleted = counter.pages_written();
            assert_eq!(deleted.len(), 2, "a delete: the row's leaf and the name's");
            // Unless a leaf splits (a new leaf, the header, the group): the same two.
            assert!(
                inserted == deleted || inserted.len() == 5,
                "an insert: {inserted:?} against {deleted:?}"
            );
        }
        store.close().unwrap();
        counter.reset();
        let store = PageTreeStore::open(counter.clone()).unwrap();
        assert_eq!(counter.pages_read(), vec![0], "an open: the header");
        assert_eq!(store.count(), Ok(rows));
        // Every leaf walked in order, across the groups.
        let mut seen = 0u64;
        let mut after = None;
        loop {
            let page = store.page(after, 1_000).unwrap();
            let Some(last) = page.last() else { break };
            assert!(page
                .iter()
                .enumerate()
                .all(|(k, u)| u.id == (seen + k as u64) * 10));
            seen += page.len() as u64;
            after = Some(last.id);
        }
        assert_eq!(seen, rows);
    }

    #[test]
    fn opened_per_request_an_impossible_leaf_page_in_the_index_fails_the_call_and_writes_nothing() {
        let memory = VectorMemory::default();
        let mut store = PageTreeStore::open(memory.clone()).unwrap();
        let users: Vec<User> = (0..3_000u64).map(|i| user(i * 10)).collect();
        store.insert_batch(&users).unwrap();
        store.close().unwrap();
        // The one group's page: the header's upper level starts at byte 40, an entry is the
        // key (u64) then the page (u32) (meta.rs); the group's entries start at byte 16,
        // 12 bytes each (index.rs).
        let group = page::read_u32(&memory, 0, 40 + 8);
        let third_leaf = 16 + 2 * 12;
        let key = page::read_u64(&memory, group, third_leaf);
        let page_count = page::read_u32(&memory, 0, 12);
        let pristine = memory.borrow().clone();
        for impossible in [0, page_count, page_count + 1_000] {
            let memory: VectorMemory = std::rc::Rc::new(std::cell::RefCell::new(pristine.clone()));
            page::write_u32(&memory, group, third_leaf + 8, impossible);
            let mut per_request = PerRequestPageTree::open_per_request(memory.clone()).unwrap();
            let before = memory.borrow().clone();
            let error = per_request.get(key).unwrap_err();
            assert!(
                error.to_string().contains("impossible"),
                "page {impossible}: {error}"
            );
            assert!(per_request.insert(user(key + 1)).is_err());
            assert!(per_request.delete(key).is_err());
            assert_eq!(
                per_request.get(0),
                Ok(user(0)),
                "the other leaves still read"
            );
            assert_eq!(
                *memory.borrow(),
                before,
                "page {impossible}: nothing written"
            );
            // The heap-held index checks the group's entries at its open.
            assert!(PageTreeStore::open(memory.clone()).is_err());
        }
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
