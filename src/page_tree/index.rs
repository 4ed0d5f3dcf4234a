//! The page tree's index of leaves: two levels, so that a lookup and an open read a bounded
//! number of pages at any table size.
//!
//! ```text
//! lower level: index pages ("groups"), one entry per leaf, in key order
//! 0        kind 3
//! 2..4     entries in the page (u16)
//! 16..     entries, 12 bytes each (lowest key of the leaf: u64, its page: u32); 5,460 a page
//! upper level: one entry per group, in the header (meta.rs): the lowest key of the group's
//!          first leaf (u64) and the group's page (u32)
//! ```
//!
//! The heap holds the upper level, in the store itself (which a canister keeps in the stack's
//! page, so reading it touches no page of its own, docs/floor.md, docs/metering.md §6).
//! A lookup binary-searches it, then searches the group's entries in stable memory with reads
//! of a few bytes (a canister bisects; per request, [`super::search`] interpolates), then the leaf:
//! stack, state, group, leaf. While the table is small enough that the
//! whole lower level fits where the upper level goes (one group of at most
//! [`INLINE_ENTRIES`] leaves, about 1.1 million users of 100-byte names with their name index,
//! in a table filled in random order), a canister's heap holds the leaves themselves instead
//! and a lookup reads no group: stack, state, leaf (below, "Where the small case is held").
//!
//! Opening reads the header and, in a canister's small case, the one group: never more than
//! two pages (docs/floor.md, "At every size"); opened per request, the header alone. A split writes one group (two when the group splits) and
//! the header; the upper level changes only when a group splits, empties, or its first key
//! changes.
//!
//! # Where the small case is held
//! Holding a small table's leaves in the heap saves a lookup its group page, for the price of
//! decoding the group (thousands of entries) at every open. A canister opens once per upgrade
//! and keeps its heap between messages: it holds them (`HEAP_LEAVES = true`, the default). An
//! edge host opens the table for every request on a fresh instance (docs/edge.md): there the
//! decoding would be most of a one-row request, so the heap holds the upper level at every
//! size (`HEAP_LEAVES = false`), an open decodes only the header's few upper-level entries,
//! and a lookup searches its group in place, a few reads of 8 bytes. The stored
//! layout is the same: either opens what the other wrote.

use super::group::{
    check_entries, copy_entries, corrupt, group_entry, group_key, group_len, read_group,
    set_group_len, shift_entries, write_entries, Entry, ENTRIES_PER_GROUP, INLINE_ENTRIES,
};
use super::meta::Meta;
use super::page::PageNo;
use super::search::{bisect_between, search_between};
use crate::error::StoreError;
use crate::name_index::FIRST_NAME_KEY;
use ic_stable_structures::Memory;

/// Where a leaf is in the index: its group (the position in the upper level) and its slot in
/// the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    group: usize,
    slot: usize,
}

/// What the heap holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Every leaf (the table has one group, `page`).
    Leaves { group: PageNo },
    /// The upper level.
    Groups,
}

/// The index: see the module's documentation. With `HEAP_LEAVES`, the heap holds a small
/// table's leaves; without, only the upper level at every size (the module's "Where the small
/// case is held").
pub struct Index<const HEAP_LEAVES: bool = true> {
    /// Leaves in the table.
    leaves: usize,
    /// What `inline` holds.
    held: Held,
    /// Entries of `inline` in use.
    held_len: usize,
    inline: [Entry; INLINE_ENTRIES],
}

impl<const HEAP_LEAVES: bool> Default for Index<HEAP_LEAVES> {
    fn default() -> Self {
        Index {
            leaves: 0,
            held: Held::Groups,
            held_len: 0,
            inline: [Entry { key: 0, page: 0 }; INLINE_ENTRIES],
        }
    }
}

impl<const HEAP_LEAVES: bool> std::fmt::Debug for Index<HEAP_LEAVES> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("leaves", &self.leaves)
            .field("held", &self.held)
            .field("inline", &&self.inline[..self.held_len])
            .finish()
    }
}

/// A store's header, index and row count, as an open finds them.
pub struct Opened<const HEAP_LEAVES: bool> {
    /// The header.
    pub meta: Meta,
    /// The leaves.
    pub index: Index<HEAP_LEAVES>,
    /// The row count, if the header's is exact.
    pub rows: Option<u64>,
}

impl<const HEAP_LEAVES: bool> Index<HEAP_LEAVES> {
    /// Opens the store in `memory` (or creates it in empty memory, [`Meta::open`]) and loads
    /// its index as `HEAP_LEAVES` says: the header, and in a canister's small case its one
    /// group.
    pub fn open(memory: &impl Memory) -> Result<Opened<HEAP_LEAVES>, StoreError> {
        let header = Meta::open(memory)?;
        let index = Self::load(
            memory,
            &header.groups,
            header.leaves,
            header.meta.page_count(),
        )?;
        Ok(Opened {
            meta: header.meta,
            index,
            rows: header.rows,
        })
    }

    /// The index of a table whose header lists `groups` and counts `leaves`: the leaves
    /// themselves when one group holds them all, they fit the heap's room and `HEAP_LEAVES`
    /// says so, else the upper level. Reads the one group in the first case, nothing in the
    /// second.
    pub fn load(
        memory: &impl Memory,
        groups: &[Entry],
        leaves: usize,
        page_count: u32,
    ) -> Result<Self, StoreError> {
        check_entries(groups, page_count)?;
        if groups.len() > INLINE_ENTRIES || groups.first().is_some_and(|first| first.key != 0) {
            return Err(corrupt("impossible upper level"));
        }
        let mut index = Index {
            leaves,
            ..Self::default()
        };
        match groups {
            [] if leaves == 0 => {}
            [] => return Err(corrupt("leaves without an index")),
            [only] if HEAP_LEAVES && leaves <= INLINE_ENTRIES => {
                let entries = read_group(memory, only.page, page_count)?;
                if entries.len() != leaves || entries.first().is_some_and(|e| e.key != 0) {
                    return Err(corrupt("the index page disagrees with the header"));
                }
                index.inline[..leaves].copy_from_slice(&entries);
                index.held_len = leaves;
                index.held = Held::Leaves { group: only.page };
            }
            _ => {
                index.inline[..groups.len()].copy_from_slice(groups);
                index.held_len = groups.len();
            }
        }
        Ok(index)
    }

    /// Leaves.
    pub fn len(&self) -> usize {
        self.leaves
    }

    /// Whether there is no leaf.
    pub fn is_empty(&self) -> bool {
        self.leaves == 0
    }

    /// Groups.
    fn group_count(&self) -> usize {
        match self.held {
            Held::Leaves { .. } => usize::from(self.leaves > 0),
            Held::Groups => self.held_len,
        }
    }

    /// Entries of group `group`.
    fn entries_of(&self, memory: &impl Memory, group: usize) -> Result<usize, StoreError> {
        match self.held {
            Held::Leaves { .. } => Ok(self.held_len),
            Held::Groups => group_len(memory, self.inline[group].page),
        }
    }

    /// The position and page of the leaf that holds (or would hold) `id`; `None` when there
    /// is no leaf.
    pub fn leaf_for(
        &self,
        memory: &impl Memory,
        id: u64,
    ) -> Result<Option<(Pos, PageNo)>, StoreError> {
        let held = &self.inline[..self.held_len];
        let Some(at) = held
            .partition_point(|entry| ({ entry.key }) <= id)
            .checked_sub(1)
        else {
            return Ok(None);
        };
        if let Held::Leaves { .. } = self.held {
            return Ok(Some((Pos { group: 0, slot: at }, held[at].page)));
        }
        let page = held[at].page;
        let len = group_len(memory, page)?;
        if len == 0 {
            return Err(corrupt(format!("index page {page} is empty")));
        }
        if HEAP_LEAVES {
            // A canister searches an index page only past one page of leaves, where
            // interpolating cost more than the reads it saved (docs/scale.md): it bisects the
            // page's keys and reads the one entry found. The group's first key is the upper
            // level's, at most `id`.
            let (mut low, mut high) = (0, len);
            while high - low > 1 {
                let middle = (low + high) / 2;
                if group_key(memory, page, middle) <= id {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            let leaf = group_entry(memory, page, low).page;
            return Ok(Some((
                Pos {
                    group: at,
                    slot: low,
                },
                leaf,
            )));
        }
        // The leaf is the last whose lowest key is at most `id`. The group's first key is the
        // upper level's, at most `id`, and the next group's first key is above every key of
        // this one: the search reads neither (opened per request, the last group reads its
        // last key to interpolate). Each probe reads a whole entry, so that the answer's page
        // is usually read already.
        let first = held[at].key;
        let mut highest_at_most_id: Option<(usize, PageNo)> = None;
        let mut key_at = |slot: usize| {
            let entry = group_entry(memory, page, slot);
            if entry.key <= id && highest_at_most_id.is_none_or(|(seen, _)| slot > seen) {
                highest_at_most_id = Some((slot, entry.page));
            }
            Ok::<_, StoreError>(entry.key)
        };
        let found = if id == first {
            Ok(0)
        } else {
            let (high, above) = match held.get(at + 1) {
                Some(next) => (len, next.key),
                None => (len - 1, key_at(len - 1)?),
            };
            if id >= above {
                // Only in the last group, `above` being its last key.
                Ok(if id == above { Ok(len - 1) } else { Err(len) })
            } else if id < FIRST_NAME_KEY && above >= FIRST_NAME_KEY {
                // Between an id and a name's key the keys are not even (the names' keys are
                // all above every id): an interpolated probe would land among the lowest
                // ids, so the id's search halves the range.
                bisect_between(1, high, id, &mut key_at)
            } else {
                search_between(1, high, first, above, id, &mut key_at)
            }?
        };
        let slot = match found {
            Ok(slot) => slot,
            Err(0) => {
                return Err(corrupt(format!(
                    "index page {page} starts above the key the upper level routes to it"
                )))
            }
            Err(after) => after - 1,
        };
        let leaf = match highest_at_most_id {
            Some((seen, leaf)) if seen == slot => leaf,
            _ => group_entry(memory, page, slot).page,
        };
        Ok(Some((Pos { group: at, slot }, leaf)))
    }

    /// The page of the leaf at `pos`.
    pub fn page(&self, memory: &impl Memory, pos: Pos) -> PageNo {
        match self.held {
            Held::Leaves { .. } => self.inline[pos.slot].page,
            Held::Groups => group_entry(memory, self.inline[pos.group].page, pos.slot).page,
        }
    }

    /// The lowest key of the leaf at `pos` (what the index routes by; the leaf's first key,
    /// or less).
    pub fn key(&self, memory: &impl Memory, pos: Pos) -> u64 {
        match self.held {
            Held::Leaves { .. } => self.inline[pos.slot].key,
            Held::Groups => group_key(memory, self.inline[pos.group].page, pos.slot),
        }
    }

    /// The first leaf's position, if there is one.
    pub fn first(&self) -> Option<Pos> {
        (self.leaves > 0).then_some(Pos { group: 0, slot: 0 })
    }

    /// The position after `pos`, if there is a leaf there.
    pub fn next(&self, memory: &impl Memory, pos: Pos) -> Result<Option<Pos>, StoreError> {
        if pos.slot + 1 < self.entries_of(memory, pos.group)? {
            return Ok(Some(Pos {
                slot: pos.slot + 1,
                ..pos
            }));
        }
        Ok((pos.group + 1 < self.group_count()).then_some(Pos {
            group: pos.group + 1,
            slot: 0,
        }))
    }

    /// The position before `pos`, if there is a leaf there.
    pub fn previous(&self, memory: &impl Memory, pos: Pos) -> Result<Option<Pos>, StoreError> {
        if pos.slot > 0 {
            return Ok(Some(Pos {
                slot: pos.slot - 1,
                ..pos
            }));
        }
        let Some(group) = pos.group.checked_sub(1) else {
            return Ok(None);
        };
        let len = self.entries_of(memory, group)?;
        Ok(len.checked_sub(1).map(|slot| Pos { group, slot }))
    }

    /// Adds the first leaf, `page`, in a new group (an empty table's first insert).
    pub fn insert_first(
        &mut self,
        memory: &impl Memory,
        meta: &mut Meta,
        page: PageNo,
    ) -> Result<(), StoreError> {
        if !self.is_empty() {
            return Err(corrupt("a first leaf in a table that has one"));
        }
        let group = meta.allocate(memory, 0)?;
        set_group_len(memory, group, 1);
        let entry = Entry { key: 0, page };
        write_entries(memory, group, 0, &[entry]);
        // The heap holds the leaf, or (without HEAP_LEAVES) its group.
        self.inline[0] = if HEAP_LEAVES {
            entry
        } else {
            Entry {
                key: 0,
                page: group,
            }
        };
        self.held_len = 1;
        self.leaves = 1;
        self.held = if HEAP_LEAVES {
            Held::Leaves { group }
        } else {
            Held::Groups
        };
        meta.write_groups(
            memory,
            &[Entry {
                key: 0,
                page: group,
            }],
            0,
            1,
        );
        meta.write_leaves(memory, self.leaves);
        Ok(())
    }

    /// Adds the leaf `page`, whose lowest key is `key`, right after the leaf at `pos`.
    pub fn insert_after(
        &mut self,
        memory: &impl Memory,
        meta: &mut Meta,
        pos: Pos,
        key: u64,
        page: PageNo,
    ) -> Result<(), StoreError> {
        let entry = Entry { key, page };
        if let Held::Leaves { group } = self.held {
            let at = pos.slot + 1;
            if self.held_len < INLINE_ENTRIES {
                self.inline.copy_within(at..self.held_len, at + 1);
                self.inline[at] = entry;
                self.held_len += 1;
                self.leaves += 1;
                write_entries(memory, group, at, &self.inline[at..self.held_len]);
                set_group_len(memory, group, self.held_len);
                meta.write_leaves(memory, self.leaves);
                return Ok(());
            }
            // Out of room in the heap (a group holds more than the heap does): from now on
            // the heap holds the upper level, the one group.
            self.inline[0] = Entry {
                key: 0,
                page: group,
            };
            self.held_len = 1;
            self.held = Held::Groups;
        }
        let mut group = pos.group;
        let mut slot = pos.slot + 1;
        let mut page_of_group = self.inline[group].page;
        let mut len = group_len(memory, page_of_group)?;
        if len == ENTRIES_PER_GROUP {
            if self.held_len == INLINE_ENTRIES {
                return Err(StoreError::storage(
                    "adding a leaf to the page tree",
                    "the index is full",
                ));
            }
            // The group splits: its upper half moves to a new index page after it.
            let upper = meta.allocate(memory, self.leaves)?;
            let half = len / 2;
            copy_entries(memory, page_of_group, half, len, upper);
            set_group_len(memory, upper, len - half);
            set_group_len(memory, page_of_group, half);
            let first = group_key(memory, upper, 0);
            self.inline.copy_within(group + 1..self.held_len, group + 2);
            self.inline[group + 1] = Entry {
                key: first,
                page: upper,
            };
            self.held_len += 1;
            meta.write_groups(
                memory,
                &self.inline[group + 1..self.held_len],
                group + 1,
                self.held_len,
            );
            if slot > half {
                group += 1;
                slot -= half;
                page_of_group = upper;
                len -= half;
            } else {
                len = half;
            }
        }
        shift_entries(memory, page_of_group, slot, len, 1);
        write_entries(memory, page_of_group, slot, &[entry]);
        set_group_len(memory, page_of_group, len + 1);
        if slot == 0 {
            self.set_group_key(memory, meta, group, key);
        }
        self.leaves += 1;
        meta.write_leaves(memory, self.leaves);
        Ok(())
    }

    /// Removes the leaf at `pos` (not the only one); the first leaf's key becomes 0.
    pub fn remove(
        &mut self,
        memory: &impl Memory,
        meta: &mut Meta,
        pos: Pos,
    ) -> Result<(), StoreError> {
        if self.leaves <= 1 {
            return Err(corrupt("removing the only leaf"));
        }
        if let Held::Leaves { group } = self.held {
            self.inline
                .copy_within(pos.slot + 1..self.held_len, pos.slot);
            self.held_len -= 1;
            self.leaves -= 1;
            self.inline[0].key = 0;
            // From the removed slot on (when the first leaf goes, the new first's key is 0).
            write_entries(
                memory,
                group,
                pos.slot,
                &self.inline[pos.slot..self.held_len],
            );
            set_group_len(memory, group, self.held_len);
            meta.write_leaves(memory, self.leaves);
            return Ok(());
        }
        let page_of_group = self.inline[pos.group].page;
        let len = group_len(memory, page_of_group)?;
        if pos.slot >= len {
            return Err(corrupt("removing a leaf past its group's end"));
        }
        self.leaves -= 1;
        if len == 1 {
            if !HEAP_LEAVES && self.held_len == 1 {
                // The only group would empty while the header counts more leaves than it
                // lists (a per-request open does not compare them; the heap-held index's
                // open does, for one group): refuse, changing nothing.
                self.leaves += 1;
                return Err(corrupt(
                    "the header counts more leaves than the index lists",
                ));
            }
            // The group empties: it goes, and the upper level with it.
            self.inline
                .copy_within(pos.group + 1..self.held_len, pos.group);
            self.held_len -= 1;
            self.inline[0].key = 0;
            meta.free(memory, page_of_group, self.leaves);
            let from = pos.group.min(self.held_len);
            meta.write_groups(
                memory,
                &self.inline[from..self.held_len],
                from,
                self.held_len,
            );
            if pos.group == 0 {
                // The new first group's first leaf takes key 0.
                write_entries(
                    memory,
                    self.inline[0].page,
                    0,
                    &[Entry {
                        key: 0,
                        page: group_entry(memory, self.inline[0].page, 0).page,
                    }],
                );
            }
        } else {
            shift_entries(memory, page_of_group, pos.slot + 1, len, -1);
            set_group_len(memory, page_of_group, len - 1);
            if pos.slot == 0 {
                // The group's new first leaf: key 0 in the first group, else the group's
                // key in the upper level.
                let first = group_entry(memory, page_of_group, 0);
                if pos.group == 0 {
                    write_entries(memory, page_of_group, 0, &[Entry { key: 0, ..first }]);
                } else {
                    self.set_group_key(memory, meta, pos.group, first.key);
                }
            }
        }
        meta.write_leaves(memory, self.leaves);
        self.settle(memory, meta)
    }

    /// Sets the lowest key of the leaf at `pos` (not the first leaf's, always 0).
    pub fn set_key(
        &mut self,
        memory: &impl Memory,
        meta: &mut Meta,
        pos: Pos,
        key: u64,
    ) -> Result<(), StoreError> {
        if pos == (Pos { group: 0, slot: 0 }) {
            return Ok(());
        }
        match self.held {
            Held::Leaves { group } => {
                self.inline[pos.slot].key = key;
                write_entries(memory, group, pos.slot, &self.inline[pos.slot..=pos.slot]);
            }
            Held::Groups => {
                let page_of_group = self.inline[pos.group].page;
                let page = group_entry(memory, page_of_group, pos.slot).page;
                write_entries(memory, page_of_group, pos.slot, &[Entry { key, page }]);
                if pos.slot == 0 {
                    self.set_group_key(memory, meta, pos.group, key);
                }
            }
        }
        Ok(())
    }

    /// Sets the upper level's key of `group` (not the first's, always 0).
    fn set_group_key(&mut self, memory: &impl Memory, meta: &mut Meta, group: usize, key: u64) {
        if group == 0 || self.held != Held::Groups {
            return;
        }
        self.inline[group].key = key;
        meta.write_groups(memory, &self.inline[group..=group], group, self.held_len);
    }

    /// Back to holding the leaves (with `HEAP_LEAVES`) when one group is left and half the
    /// heap's room holds them (half, so that a table at the edge does not go back and forth).
    fn settle(&mut self, memory: &impl Memory, meta: &Meta) -> Result<(), StoreError> {
        if HEAP_LEAVES
            && self.held == Held::Groups
            && self.held_len == 1
            && self.leaves <= INLINE_ENTRIES / 2
        {
            let group = self.inline[0].page;
            let entries = read_group(memory, group, meta.page_count())?;
            self.inline[..entries.len()].copy_from_slice(&entries);
            self.held_len = entries.len();
            self.held = Held::Leaves { group };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_tree::tests_support::PageCounter;
    use ic_stable_structures::VectorMemory;

    /// Every leaf of `index` in order, walked with `next`.
    fn walk<const H: bool>(index: &Index<H>, memory: &impl Memory) -> Vec<PageNo> {
        let mut pages = Vec::new();
        let mut at = index.first();
        while let Some(pos) = at {
            pages.push(index.page(memory, pos));
            at = index.next(memory, pos).unwrap();
        }
        pages
    }

    /// A header, an index and a model of its leaves (key, page) as the tests build them.
    struct Fixture<const HEAP_LEAVES: bool> {
        memory: VectorMemory,
        meta: Meta,
        index: Index<HEAP_LEAVES>,
        model: Vec<(u64, PageNo)>,
    }

    impl<const HEAP_LEAVES: bool> Fixture<HEAP_LEAVES> {
        fn new() -> Self {
            let memory = VectorMemory::default();
            let opened = Index::open(&memory).unwrap();
            Fixture {
                memory,
                meta: opened.meta,
                index: opened.index,
                model: Vec::new(),
            }
        }

        /// Adds a leaf with key `key` where it belongs, as a split would.
        fn add(&mut self, key: u64) {
            let page = self.meta.allocate(&self.memory, self.index.len()).unwrap();
            if self.model.is_empty() {
                self.index
                    .insert_first(&self.memory, &mut self.meta, page)
                    .unwrap();
                self.model.push((0, page));
                return;
            }
            let (pos, _) = self.index.leaf_for(&self.memory, key).unwrap().unwrap();
            self.index
                .insert_after(&self.memory, &mut self.meta, pos, key, page)
                .unwrap();
            let at = self.model.partition_point(|(k, _)| *k <= key);
            self.model.insert(at, (key, page));
        }

        /// Removes the leaf that holds `key`.
        fn remove(&mut self, key: u64) {
            let (pos, page) = self.index.leaf_for(&self.memory, key).unwrap().unwrap();
            self.index
                .remove(&self.memory, &mut self.meta, pos)
                .unwrap();
            self.meta.free(&self.memory, page, self.index.len());
            let at = self.model.iter().position(|(_, p)| *p == page).unwrap();
            self.model.remove(at);
            self.model[0].0 = 0;
        }

        /// Every leaf is found by its key and by the key before the next, walked in order,
        /// and the same after an open with either hold (both read the same layout).
        fn check(&self) {
            let pages: Vec<PageNo> = self.model.iter().map(|(_, page)| *page).collect();
            assert_eq!(walk(&self.index, &self.memory), pages);
            check_lookups(&self.index, &self.memory, &self.model);
            let reopened = Index::<true>::open(&self.memory).unwrap();
            assert_eq!(reopened.meta, self.meta);
            assert_eq!(walk(&reopened.index, &self.memory), pages);
            check_lookups(&reopened.index, &self.memory, &self.model);
            let reopened = Index::<false>::open(&self.memory).unwrap();
            assert_eq!(reopened.meta, self.meta);
            assert_eq!(reopened.index.held, Held::Groups);
            assert_eq!(walk(&reopened.index, &self.memory), pages);
            check_lookups(&reopened.index, &self.memory, &self.model);
        }
    }

    /// Every leaf of `model` is found by its key and by the key before the next leaf's.
    fn check_lookups<const H: bool>(
        index: &Index<H>,
        memory: &impl Memory,
        model: &[(u64, PageNo)],
    ) {
        for (at, (key, page)) in model.iter().enumerate() {
            let (_, found) = index.leaf_for(memory, *key).unwrap().unwrap();
            assert_eq!(found, *page, "leaf {at} of key {key}");
            if let Some((next_key, _)) = model.get(at + 1) {
                let (_, found) = index.leaf_for(memory, next_key - 1).unwrap().unwrap();
                assert_eq!(found, *page, "the key before leaf {}", at + 1);
            }
        }
    }

    /// Leaves added and removed in a small table; `held` is what the heap must hold.
    fn small_index<const HEAP_LEAVES: bool>(held: fn(Held) -> bool) {
        let mut fixture = Fixture::<HEAP_LEAVES>::new();
        assert_eq!(fixture.index.leaf_for(&fixture.memory, 5).unwrap(), None);
        for key in [0, 100, 200, 150, 50] {
            fixture.add(key);
        }
        assert!(held(fixture.index.held), "{:?}", fixture.index.held);
        fixture.check();
        fixture.remove(0);
        fixture.check();
        let (_, page) = fixture.index.leaf_for(&fixture.memory, 7).unwrap().unwrap();
        assert_eq!(page, fixture.model[0].1, "the first key is 0 again");
        fixture.remove(150);
        fixture.check();
        assert!(held(fixture.index.held), "{:?}", fixture.index.held);
    }

    #[test]
    fn a_small_index_is_held_whole_and_finds_every_leaf() {
        small_index::<true>(|held| matches!(held, Held::Leaves { .. }));
    }

    #[test]
    fn opened_per_request_a_small_index_is_searched_in_place_and_finds_every_leaf() {
        small_index::<false>(|held| held == Held::Groups);
    }

    /// More leaves than the heap and one group hold, then most of them removed, emptying
    /// groups; `held` is what the heap must hold at the end, with 10 leaves.
    fn large_index<const HEAP_LEAVES: bool>(held: fn(Held) -> bool) {
        let mut fixture = Fixture::<HEAP_LEAVES>::new();
        // Appends, then keys between them.
        let leaves = ENTRIES_PER_GROUP as u64 * 2 + 500;
        for key in 0..leaves {
            fixture.add(key * 1_000);
        }
        for key in (0..leaves).step_by(3) {
            fixture.add(key * 1_000 + 500);
        }
        assert_eq!(fixture.index.held, Held::Groups);
        assert!(
            fixture.index.held_len > 2,
            "{} groups",
            fixture.index.held_len
        );
        fixture.check();
        // Every leaf of the first groups goes, the first last: groups empty and go, the
        // first key stays 0.
        let gone: Vec<u64> = fixture.model.iter().map(|(key, _)| *key).collect();
        for key in gone.iter().skip(1).take(ENTRIES_PER_GROUP + 100) {
            fixture.remove(*key);
        }
        fixture.remove(0);
        fixture.check();
        // Down to a few leaves.
        let rest: Vec<u64> = fixture.model.iter().map(|(key, _)| *key).collect();
        for key in rest.iter().skip(10) {
            fixture.remove(*key);
        }
        assert!(held(fixture.index.held), "{:?}", fixture.index.held);
        assert_eq!(fixture.index.len(), 10);
        if !HEAP_LEAVES {
            assert_eq!(fixture.index.held_len, 1, "the emptied groups went");
        }
        fixture.check();
    }

    #[test]
    fn a_large_index_splits_groups_and_empties_them() {
        large_index::<true>(|held| matches!(held, Held::Leaves { .. }));
    }

    #[test]
    fn opened_per_request_a_large_index_splits_groups_and_empties_them() {
        large_index::<false>(|held| held == Held::Groups);
    }

    #[test]
    fn opened_per_request_a_header_counting_more_leaves_than_the_index_refuses_to_empty_it() {
        let mut fixture = Fixture::<false>::new();
        fixture.add(0);
        // The header counts 2 leaves where the one group lists 1.
        fixture.meta.write_leaves(&fixture.memory, 2);
        let mut opened = Index::<false>::open(&fixture.memory).unwrap();
        let (pos, _) = opened.index.leaf_for(&fixture.memory, 0).unwrap().unwrap();
        let before = fixture.memory.borrow().clone();
        let error = opened
            .index
            .remove(&fixture.memory, &mut opened.meta, pos)
            .unwrap_err();
        assert!(error.to_string().contains("more leaves"), "{error}");
        assert_eq!(*fixture.memory.borrow(), before, "nothing written");
        assert_eq!(opened.index.len(), 2, "the heap's count as it was");
        // The heap-held index refuses the table at its open instead.
        assert!(Index::<true>::open(&fixture.memory).is_err());
    }

    /// The leaves of `keys` (distinct, with 0), added in the order given, in an index opened
    /// per request; looks up each of `probes` and the key after it, each answer the model's,
    /// and returns the reads a lookup and the groups.
    fn reads_per_lookup(keys: &[u64], probes: &[u64]) -> (f64, usize) {
        let mut fixture = Fixture::<false>::new();
        for key in keys {
            fixture.add(*key);
        }
        let counted = PageCounter::new(fixture.memory.clone());
        let opened = Index::<false>::open(&counted).unwrap();
        let probes: Vec<u64> = probes
            .iter()
            .flat_map(|key| [*key, key.saturating_add(1)])
            .collect();
        counted.reset();
        for probe in &probes {
            let at = fixture.model.partition_point(|(key, _)| key <= probe) - 1;
            let (_, page) = opened.index.leaf_for(&counted, *probe).unwrap().unwrap();
            assert_eq!(page, fixture.model[at].1, "the leaf of key {probe}");
        }
        let reads = counted.reads() as f64 / probes.len() as f64;
        (reads, opened.index.held_len)
    }

    /// `count` distinct random keys from `draw`, sorted.
    fn distinct(count: usize, mut draw: impl FnMut() -> u64) -> Vec<u64> {
        let mut keys: Vec<u64> = (0..count).map(|_| draw()).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    #[test]
    fn a_group_is_searched_with_fewer_reads_than_a_binary_search() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // A group's length, its keys, the leaf's entry: a binary search of a full group
        // reads about 15.
        let binary = 2.0 + (ENTRIES_PER_GROUP as f64).log2();
        for (ids, names) in [(2_700, 2_700), (7_000, 7_000)] {
            // An aged table's leaves: the lowest keys of its rows' leaves are ids spread
            // evenly, those of its names' leaves hashed keys above every id; added in no
            // order. One group, then a few: the ids', the one where they meet, the names'.
            let ids = distinct(ids, || 1 + random() % 30_000_000);
            let names = distinct(names, || crate::name_index::FIRST_NAME_KEY | random() >> 1);
            let mut keys: Vec<u64> = ids.iter().chain(&names).copied().collect();
            for at in (1..keys.len()).rev() {
                keys.swap(at, (random() % (at as u64 + 1)) as usize);
            }
            keys.insert(0, 0);
            let (id_reads, groups) = reads_per_lookup(&keys, &ids);
            let (name_reads, _) = reads_per_lookup(&keys, &names);
            let case = format!("{} leaves in {groups} groups", keys.len());
            assert!(
                id_reads <= binary,
                "{id_reads} reads an id's lookup, {case}"
            );
            assert!(
                name_reads <= binary,
                "{name_reads} reads a name's lookup, {case}"
            );
            if groups == 1 {
                // Names' keys are even from the lowest id to the highest name.
                assert!(
                    name_reads < 0.6 * binary,
                    "{name_reads} reads a name's, {case}"
                );
            } else {
                // The ids' own group is searched between the keys around it.
                assert!(id_reads < 0.6 * binary, "{id_reads} reads an id's, {case}");
            }
        }
    }

    #[test]
    fn opening_reads_at_most_the_header_and_one_group() {
        let mut fixture = Fixture::<true>::new();
        for key in 0..(INLINE_ENTRIES as u64 + 10) {
            fixture.add(key * 10);
        }
        let counted = PageCounter::new(fixture.memory.clone());
        let reopened = Index::<true>::open(&counted).unwrap();
        assert_eq!(reopened.index.len(), INLINE_ENTRIES + 10);
        assert_eq!(counted.pages_read(), vec![0], "the header only");
    }

    #[test]
    fn opened_per_request_an_open_reads_the_header_alone_and_a_lookup_one_group() {
        let mut fixture = Fixture::<false>::new();
        for key in 0..1_000 {
            fixture.add(key * 10);
        }
        let counted = PageCounter::new(fixture.memory.clone());
        let reopened = Index::<false>::open(&counted).unwrap();
        assert_eq!(counted.pages_read(), vec![0], "the header only");
        let group = u64::from(reopened.index.inline[0].page);
        counted.reset();
        let (_, leaf) = reopened.index.leaf_for(&counted, 5_555).unwrap().unwrap();
        assert_eq!(leaf, fixture.model[555].1);
        assert_eq!(counted.pages_read(), vec![group], "the group alone");
        // The heap index of the same table reads its group at the open instead.
        counted.reset();
        let held = Index::<true>::open(&counted).unwrap();
        assert_eq!(counted.pages_read(), vec![0, group]);
        counted.reset();
        assert_eq!(
            held.index.leaf_for(&counted, 5_555).unwrap().unwrap().1,
            leaf
        );
        assert_eq!(counted.pages_read(), Vec::<u64>::new());
    }
}
