//! A leaf: one 64 KiB page holding users sorted by id, as a slotted page.
//!
//! ```text
//! 0       kind (1 = leaf)
//! 2..4    count: users in the leaf
//! 4..8    data_start: records occupy data_start..65536, the newest lowest
//! 8..12   garbage: bytes of records no slot points to any more
//! 16..    slots: one little-endian u16 offset per user, in id order
//! record  key (u64, little-endian), value length (u8), value
//! ```
//! A row's key is its id and its value its username (UTF-8); the by-name index's entries
//! ([`crate::name_index`]) have keys above every id and values of an id and a username.
//!
//! Between the slots and the records is the free space. A lookup searches the slots, reading
//! one slot and one id per probe, probing where the id would lie if the keys were spread
//! evenly ([`Leaf::search`]); an insert writes its record below the others and shifts the
//! slots after its position. A removed or overwritten record becomes
//! garbage, which [`Leaf::repack`] reclaims when an insert needs the room.

use super::page::{self, PageNo, PAGE_BYTES};
use super::search;
use crate::error::StoreError;
use crate::user::UsernameBuf;
use ic_stable_structures::Memory;

/// The kind byte of a leaf page.
pub const KIND_LEAF: u8 = 1;

/// Bytes before the slots.
const HEADER_BYTES: usize = 16;

/// Bytes of one slot.
const SLOT_BYTES: usize = 2;

/// Bytes of a record before its username: the id and the length.
const RECORD_HEAD_BYTES: usize = 9;

/// Bytes of the longest value: a name entry's.
pub const MAX_VALUE_BYTES: usize = crate::name_index::MAX_VALUE_BYTES;

/// Bytes of the longest record.
const MAX_RECORD_BYTES: usize = RECORD_HEAD_BYTES + MAX_VALUE_BYTES;

/// Bytes of slots moved at a time when an insert or a removal shifts them (a multiple of
/// [`SLOT_BYTES`]).
const SHIFT_CHUNK_BYTES: usize = 256;

/// Bytes a user takes in a leaf: its record and its slot.
pub fn footprint(username_bytes: usize) -> usize {
    RECORD_HEAD_BYTES + username_bytes + SLOT_BYTES
}

/// Bytes of a leaf that hold nothing but its header.
#[cfg(test)]
const USABLE_BYTES: usize = PAGE_BYTES - HEADER_BYTES;

/// A user as a leaf stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The id.
    pub id: u64,
    /// The username's UTF-8 bytes.
    pub username: Vec<u8>,
}

/// Where a new record of some size can go in a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// In the free space as it is.
    Free,
    /// Once the garbage is reclaimed ([`Leaf::repack`]).
    AfterRepack,
    /// Not in this leaf: it must split.
    None,
}

/// A leaf of the engine's memory, its header read.
pub struct Leaf<'m, M: Memory> {
    memory: &'m M,
    page: PageNo,
    count: usize,
    data_start: usize,
    garbage: usize,
}

/// A page that should be a leaf and is not (or whose header is impossible).
fn corrupt(page: PageNo, what: &str) -> StoreError {
    StoreError::storage(
        "reading a leaf of the page tree",
        format!("page {page}: {what}"),
    )
}

impl<'m, M: Memory> Leaf<'m, M> {
    /// Reads the header of the leaf at `page`.
    pub fn load(memory: &'m M, page: PageNo) -> Result<Self, StoreError> {
        let mut header = [0; 12];
        page::read(memory, page, 0, &mut header);
        if header[0] != KIND_LEAF {
            return Err(corrupt(page, "not a leaf"));
        }
        let count = usize::from(u16::from_le_bytes([header[2], header[3]]));
        let data_start = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let garbage = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as usize;
        let slots_end = HEADER_BYTES + count * SLOT_BYTES;
        if data_start > PAGE_BYTES || slots_end > data_start || garbage > PAGE_BYTES - data_start {
            return Err(corrupt(page, "impossible header"));
        }
        Ok(Leaf {
            memory,
            page,
            count,
            data_start,
            garbage,
        })
    }

    /// Writes an empty leaf at `page`.
    pub fn create(memory: &'m M, page: PageNo) -> Self {
        let leaf = Leaf {
            memory,
            page,
            count: 0,
            data_start: PAGE_BYTES,
            garbage: 0,
        };
        leaf.write_header();
        leaf
    }

    /// The page it is on.
    pub fn page(&self) -> PageNo {
        self.page
    }

    /// Users in the leaf.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes its users take (records and slots).
    pub fn live_bytes(&self) -> usize {
        PAGE_BYTES - self.data_start - self.garbage + self.count * SLOT_BYTES
    }

    fn write_header(&self) {
        let mut header = [0; 12];
        header[0] = KIND_LEAF;
        header[2..4].copy_from_slice(&(self.count as u16).to_le_bytes());
        header[4..8].copy_from_slice(&(self.data_start as u32).to_le_bytes());
        header[8..12].copy_from_slice(&(self.garbage as u32).to_le_bytes());
        page::write(self.memory, self.page, 0, &header);
    }

    /// The offset of the record of the user at `index`.
    fn offset(&self, index: usize) -> Result<usize, StoreError> {
        let offset = usize::from(page::read_u16(
            self.memory,
            self.page,
            HEADER_BYTES + index * SLOT_BYTES,
        ));
        if offset < self.data_start || offset + RECORD_HEAD_BYTES > PAGE_BYTES {
            return Err(corrupt(self.page, "a slot points outside the records"));
        }
        Ok(offset)
    }

    /// The id of the user at `index`.
    pub fn id(&self, index: usize) -> Result<u64, StoreError> {
        let offset = self.offset(index)?;
        Ok(page::read_u64(self.memory, self.page, offset))
    }

    /// The index of `id` (`Ok`), or where it would go (`Err`), by [`search::search`]: few
    /// keys read, each two stable-memory reads (its slot, then its bytes).
    pub fn search(&self, id: u64) -> Result<Result<usize, usize>, StoreError> {
        search::search(self.count, id, |index| self.id(index))
    }

    /// The record at `offset`, and how many bytes it takes.
    fn record_at(&self, offset: usize) -> Result<(Record, usize), StoreError> {
        let mut head = [0; RECORD_HEAD_BYTES];
        page::read(self.memory, self.page, offset, &mut head);
        let id = u64::from_le_bytes([
            head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7],
        ]);
        let len = usize::from(head[8]);
        if offset + RECORD_HEAD_BYTES + len > PAGE_BYTES {
            return Err(corrupt(self.page, "a record runs past the page"));
        }
        let mut username = vec![0; len];
        page::read(
            self.memory,
            self.page,
            offset + RECORD_HEAD_BYTES,
            &mut username,
        );
        Ok((Record { id, username }, RECORD_HEAD_BYTES + len))
    }

    /// The user at `index`.
    pub fn record(&self, index: usize) -> Result<Record, StoreError> {
        self.record_at(self.offset(index)?)
            .map(|(record, _)| record)
    }

    /// The username of the record at `offset` into `username`, and the record's size.
    fn username_at(&self, offset: usize, username: &mut UsernameBuf) -> Result<usize, StoreError> {
        let mut len = [0u8; 1];
        page::read(self.memory, self.page, offset + 8, &mut len);
        let len = usize::from(len[0]);
        let space = username
            .space(len)
            .filter(|_| offset + RECORD_HEAD_BYTES + len <= PAGE_BYTES)
            .ok_or_else(|| corrupt(self.page, "a record runs past the page"))?;
        page::read(self.memory, self.page, offset + RECORD_HEAD_BYTES, space);
        if !username.commit(len) {
            return Err(corrupt(self.page, "a stored username is not UTF-8"));
        }
        Ok(RECORD_HEAD_BYTES + len)
    }

    /// The username of the user at `index` into `username` (no heap allocation).
    pub fn username_into(
        &self,
        index: usize,
        username: &mut UsernameBuf,
    ) -> Result<(), StoreError> {
        self.username_at(self.offset(index)?, username).map(|_| ())
    }

    /// Every user, in id order.
    pub fn records(&self) -> Result<Vec<Record>, StoreError> {
        (0..self.count).map(|index| self.record(index)).collect()
    }

    /// Where a record with a username of `username_bytes` can go.
    pub fn room_for(&self, username_bytes: usize) -> Room {
        let needed = footprint(username_bytes);
        let free = self.data_start - (HEADER_BYTES + self.count * SLOT_BYTES);
        if needed <= free {
            Room::Free
        } else if needed <= free + self.garbage {
            Room::AfterRepack
        } else {
            Room::None
        }
    }

    /// Inserts the user `id` with `username` at `index`; the leaf must have [`Room::Free`]
    /// for it. The record is assembled on the stack: a heap buffer would touch a heap page
    /// (docs/metering.md §6).
    pub fn insert(&mut self, index: usize, id: u64, username: &[u8]) {
        let size = RECORD_HEAD_BYTES + username.len();
        let offset = self.data_start - size;
        let mut bytes = [0u8; MAX_RECORD_BYTES];
        bytes[..8].copy_from_slice(&id.to_le_bytes());
        bytes[8] = username.len() as u8;
        bytes[RECORD_HEAD_BYTES..size].copy_from_slice(username);
        page::write(self.memory, self.page, offset, &bytes[..size]);
        self.shift_slots(index, 1);
        page::write_u16(
            self.memory,
            self.page,
            HEADER_BYTES + index * SLOT_BYTES,
            offset as u16,
        );
        self.count += 1;
        self.data_start = offset;
        self.write_header();
    }

    /// The value of the record at `index` into `value`; returns its length.
    pub fn value_into(
        &self,
        index: usize,
        value: &mut [u8; MAX_VALUE_BYTES],
    ) -> Result<usize, StoreError> {
        let offset = self.offset(index)?;
        let len = self.value_len(offset)?;
        page::read(
            self.memory,
            self.page,
            offset + RECORD_HEAD_BYTES,
            &mut value[..len],
        );
        Ok(len)
    }

    /// The length of the value of the record at `offset`.
    fn value_len(&self, offset: usize) -> Result<usize, StoreError> {
        let mut len = [0u8; 1];
        page::read(self.memory, self.page, offset + 8, &mut len);
        let len = usize::from(len[0]);
        if len > MAX_VALUE_BYTES || offset + RECORD_HEAD_BYTES + len > PAGE_BYTES {
            return Err(corrupt(self.page, "a record runs past the page"));
        }
        Ok(len)
    }

    /// Removes the record at `index`; it becomes garbage.
    pub fn remove_record(&mut self, index: usize) -> Result<(), StoreError> {
        let size = RECORD_HEAD_BYTES + self.value_len(self.offset(index)?)?;
        self.discard(index, size);
        Ok(())
    }

    /// Removes the user at `index`, its username into `removed`; its record becomes garbage.
    pub fn remove(&mut self, index: usize, removed: &mut UsernameBuf) -> Result<(), StoreError> {
        let size = self.username_at(self.offset(index)?, removed)?;
        self.discard(index, size);
        Ok(())
    }

    /// Drops the slot at `index`, whose record of `size` bytes becomes garbage.
    fn discard(&mut self, index: usize, size: usize) {
        self.shift_slots(index + 1, -1);
        self.count -= 1;
        self.garbage += size;
        self.write_header();
    }

    /// Gives the user at `index` the username `username` where its record is, if it is no
    /// longer than the old one (the rest becomes garbage); `false` when it does not fit.
    pub fn overwrite(&mut self, index: usize, username: &[u8]) -> Result<bool, StoreError> {
        let offset = self.offset(index)?;
        let mut len = [0u8; 1];
        page::read(self.memory, self.page, offset + 8, &mut len);
        let old = usize::from(len[0]);
        if username.len() > old {
            return Ok(false);
        }
        let mut bytes = [0u8; MAX_RECORD_BYTES];
        bytes[0] = username.len() as u8;
        bytes[1..=username.len()].copy_from_slice(username);
        page::write(
            self.memory,
            self.page,
            offset + 8,
            &bytes[..=username.len()],
        );
        if username.len() < old {
            self.garbage += old - username.len();
            self.write_header();
        }
        Ok(true)
    }

    /// Moves the slots from `from` to the end by one slot, right (`1`) or left (`-1`), in
    /// chunks through a small stack buffer (far ends first, so no chunk overwrites slots not
    /// yet moved).
    fn shift_slots(&self, from: usize, by: isize) {
        let start = HEADER_BYTES + from * SLOT_BYTES;
        let end = HEADER_BYTES + self.count * SLOT_BYTES;
        let mut chunk = [0u8; SHIFT_CHUNK_BYTES];
        let mut moved = 0;
        while moved < end.saturating_sub(start) {
            let len = SHIFT_CHUNK_BYTES.min(end - start - moved);
            // Right: from the end backwards; left: from the start forwards.
            let at = if by > 0 {
                end - moved - len
            } else {
                start + moved
            };
            page::read(self.memory, self.page, at, &mut chunk[..len]);
            let to = (at as isize + by * SLOT_BYTES as isize) as usize;
            page::write(self.memory, self.page, to, &chunk[..len]);
            moved += len;
        }
    }

    /// Moves the users above the share `keep` (numerator, denominator) of the record bytes
    /// into the empty leaf `upper`; the records stay behind as garbage, or become free space
    /// when they were the newest. Returns the first id `upper` holds.
    ///
    /// Only the moved users are read (the leaf's header gives the bytes of all of them), from
    /// the last one down, and `upper` is written in a few large writes through buffers on the
    /// stack ([`Packer`]): a split costs in proportion to what it moves, and touches no heap
    /// page.
    pub fn move_upper_part(
        &mut self,
        upper: &mut Leaf<'m, M>,
        keep: (usize, usize),
    ) -> Result<u64, StoreError> {
        if self.count < 2 {
            return Err(corrupt(self.page, "a split of a leaf with one user"));
        }
        let total = PAGE_BYTES - self.data_start - self.garbage;
        let to_move = total - total * keep.0 / keep.1;
        let mut cut = self.count;
        let mut moved = 0;
        loop {
            cut -= 1;
            moved += self.record_size(cut)?;
            if cut == 1 || moved >= to_move {
                break;
            }
        }
        self.move_records(upper, cut, moved)
    }

    /// Moves the users from `cut` on (at least one, not all) into the empty leaf `upper`, as
    /// [`Leaf::move_upper_part`] does. Returns the first id `upper` holds.
    pub fn move_from(&mut self, upper: &mut Leaf<'m, M>, cut: usize) -> Result<u64, StoreError> {
        if cut == 0 || cut >= self.count {
            return Err(corrupt(
                self.page,
                "a split that moves nothing or everything",
            ));
        }
        let mut moved = 0;
        for index in cut..self.count {
            moved += self.record_size(index)?;
        }
        self.move_records(upper, cut, moved)
    }

    /// Moves the users from `cut` on, `moved` bytes of records, into the empty leaf `upper`.
    fn move_records(
        &mut self,
        upper: &mut Leaf<'m, M>,
        cut: usize,
        moved: usize,
    ) -> Result<u64, StoreError> {
        let mut packer = Packer::new(upper);
        let mut record = [0u8; MAX_RECORD_BYTES];
        let mut first = None;
        let (mut lowest, mut end) = (PAGE_BYTES, 0);
        for index in cut..self.count {
            let offset = self.offset(index)?;
            let size = self.record_size(index)?;
            lowest = lowest.min(offset);
            end = end.max(offset + size);
            page::read(self.memory, self.page, offset, &mut record[..size]);
            first.get_or_insert(u64::from_le_bytes([
                record[0], record[1], record[2], record[3], record[4], record[5], record[6],
                record[7],
            ]));
            packer.push(&record[..size]);
        }
        packer.finish();
        self.count = cut;
        if lowest == self.data_start && end == self.data_start + moved {
            // The moved records were the newest, side by side (a leaf filled in ascending
            // order): their bytes are free space again, with no repack.
            self.data_start += moved;
        } else {
            self.garbage += moved;
        }
        self.write_header();
        first.ok_or_else(|| corrupt(self.page, "a split of a leaf with one user"))
    }

    /// Bytes of the record of the user at `index`.
    fn record_size(&self, index: usize) -> Result<usize, StoreError> {
        let offset = self.offset(index)?;
        let mut len = [0u8; 1];
        page::read(self.memory, self.page, offset + 8, &mut len);
        let size = RECORD_HEAD_BYTES + usize::from(len[0]);
        if offset + size > PAGE_BYTES {
            return Err(corrupt(self.page, "a record runs past the page"));
        }
        Ok(size)
    }

    /// Rewrites the leaf with `records` (in id order) packed at the end, no garbage: one write
    /// of the whole page.
    pub fn rewrite(memory: &'m M, page: PageNo, records: &[Record]) -> Self {
        let mut image = vec![0; PAGE_BYTES];
        let mut data_start = PAGE_BYTES;
        for (index, record) in records.iter().enumerate() {
            let size = RECORD_HEAD_BYTES + record.username.len();
            data_start -= size;
            image[data_start..data_start + 8].copy_from_slice(&record.id.to_le_bytes());
            image[data_start + 8] = record.username.len() as u8;
            image[data_start + RECORD_HEAD_BYTES..data_start + size]
                .copy_from_slice(&record.username);
            let slot = HEADER_BYTES + index * SLOT_BYTES;
            image[slot..slot + SLOT_BYTES].copy_from_slice(&(data_start as u16).to_le_bytes());
        }
        let leaf = Leaf {
            memory,
            page,
            count: records.len(),
            data_start,
            garbage: 0,
        };
        image[0] = KIND_LEAF;
        image[2..4].copy_from_slice(&(leaf.count as u16).to_le_bytes());
        image[4..8].copy_from_slice(&(data_start as u32).to_le_bytes());
        page::write(memory, page, 0, &image);
        leaf
    }

    /// Reclaims the garbage: the leaf rewritten with its records packed.
    pub fn repack(self) -> Result<Self, StoreError> {
        let records = self.records()?;
        Ok(Leaf::rewrite(self.memory, self.page, &records))
    }
}

/// Appends records to an empty leaf in a few large writes: records gather below one another in
/// a stack buffer, slots in another, each written out when full, the header once at the end.
struct Packer<'a, 'm, M: Memory> {
    leaf: &'a mut Leaf<'m, M>,
    /// Records not yet written: the tail of `records`, ending at the leaf's `data_start`
    /// before they were added.
    records: [u8; PACK_RECORD_BYTES],
    records_len: usize,
    /// Slots not yet written, from slot `slots_from` on.
    slots: [u8; PACK_SLOT_BYTES],
    slots_len: usize,
    slots_from: usize,
}

/// Bytes of records a [`Packer`] gathers before a write.
const PACK_RECORD_BYTES: usize = 4096;

/// Bytes of slots a [`Packer`] gathers before a write.
const PACK_SLOT_BYTES: usize = 512;

impl<'a, 'm, M: Memory> Packer<'a, 'm, M> {
    fn new(leaf: &'a mut Leaf<'m, M>) -> Self {
        let slots_from = leaf.count;
        Packer {
            leaf,
            records: [0; PACK_RECORD_BYTES],
            records_len: 0,
            slots: [0; PACK_SLOT_BYTES],
            slots_len: 0,
            slots_from,
        }
    }

    /// Adds `record` (id, length, username) after the leaf's users; it must fit the leaf.
    fn push(&mut self, record: &[u8]) {
        if self.records_len + record.len() > PACK_RECORD_BYTES {
            self.flush_records();
        }
        let start = PACK_RECORD_BYTES - self.records_len - record.len();
        self.records[start..start + record.len()].copy_from_slice(record);
        self.records_len += record.len();
        // The record's place once written: below the ones written and gathered before it.
        let offset = self.leaf.data_start - self.records_len;
        if self.slots_len + SLOT_BYTES > PACK_SLOT_BYTES {
            self.flush_slots();
        }
        self.slots[self.slots_len..self.slots_len + SLOT_BYTES]
            .copy_from_slice(&(offset as u16).to_le_bytes());
        self.slots_len += SLOT_BYTES;
        self.leaf.count += 1;
    }

    fn flush_records(&mut self) {
        if self.records_len == 0 {
            return;
        }
        let start = PACK_RECORD_BYTES - self.records_len;
        self.leaf.data_start -= self.records_len;
        page::write(
            self.leaf.memory,
            self.leaf.page,
            self.leaf.data_start,
            &self.records[start..],
        );
        self.records_len = 0;
    }

    fn flush_slots(&mut self) {
        if self.slots_len == 0 {
            return;
        }
        page::write(
            self.leaf.memory,
            self.leaf.page,
            HEADER_BYTES + self.slots_from * SLOT_BYTES,
            &self.slots[..self.slots_len],
        );
        self.slots_from += self.slots_len / SLOT_BYTES;
        self.slots_len = 0;
    }

    /// Writes what is gathered and the header.
    fn finish(mut self) {
        self.flush_records();
        self.flush_slots();
        self.leaf.write_header();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_tree::tests_support::PageCounter;
    use ic_stable_structures::VectorMemory;

    fn record(id: u64, name: &str) -> Record {
        Record {
            id,
            username: name.as_bytes().to_vec(),
        }
    }

    fn memory() -> VectorMemory {
        let memory = VectorMemory::default();
        memory.grow(2);
        memory
    }

    #[test]
    fn inserts_keep_id_order_and_removals_leave_garbage() {
        let memory = memory();
        let mut leaf = Leaf::create(&memory, 1);
        for id in [50, 10, 30, 20, 40] {
            let index = leaf.search(id).unwrap().unwrap_err();
            leaf.insert(index, id, format!("user-{id}").as_bytes());
        }
        let leaf = Leaf::load(&memory, 1).unwrap();
        let ids: Vec<u64> = (0..leaf.count()).map(|i| leaf.id(i).unwrap()).collect();
        assert_eq!(ids, [10, 20, 30, 40, 50]);
        assert_eq!(leaf.search(30).unwrap(), Ok(2));
        assert_eq!(leaf.search(35).unwrap(), Err(3));
        let mut leaf = leaf;
        let mut removed = UsernameBuf::default();
        leaf.remove(2, &mut removed).unwrap();
        assert_eq!(removed.as_str(), "user-30");
        assert_eq!(leaf.count(), 4);
        assert_eq!(leaf.garbage, 9 + 7);
        assert_eq!(leaf.record(2).unwrap(), record(40, "user-40"));
        let repacked = leaf.repack().unwrap();
        assert_eq!(repacked.garbage, 0);
        assert_eq!(
            repacked.records().unwrap(),
            [10, 20, 40, 50].map(|id| record(id, &format!("user-{id}")))
        );
    }

    /// A leaf holding `keys` (sorted, distinct) with empty names, and the memory's reads.
    fn leaf_of(keys: &[u64]) -> PageCounter {
        let memory = PageCounter::new(memory());
        let mut leaf = Leaf::create(&memory, 1);
        for (index, key) in keys.iter().enumerate() {
            leaf.insert(index, *key, b"");
        }
        memory
    }

    /// Searches every key of the leaf and every gap around them; each answer must be the
    /// sorted list's. Returns the reads per search.
    fn search_everything(keys: &[u64]) -> f64 {
        let memory = leaf_of(keys);
        let leaf = Leaf::load(&memory, 1).unwrap();
        let mut probes = vec![0, u64::MAX];
        for key in keys {
            probes.extend([*key, key.saturating_sub(1), key.saturating_add(1)]);
        }
        memory.reset();
        for probe in &probes {
            let expected = keys.binary_search(probe);
            assert_eq!(
                leaf.search(*probe).unwrap(),
                expected,
                "key {probe} in {keys:?}"
            );
        }
        memory.reads() as f64 / probes.len() as f64
    }

    #[test]
    fn a_search_finds_what_a_binary_search_finds_and_reads_few_keys_when_they_are_even() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut random = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // The ids of an aged table: spread evenly.
        let mut even: Vec<u64> = (0..200).map(|_| random() % 1_000_000_000).collect();
        even.sort_unstable();
        even.dedup();
        // Where the ids end and the by-name index's keys start, and other uneven spreads.
        let mut split: Vec<u64> = even[..100].to_vec();
        split.extend(
            even[100..]
                .iter()
                .map(|key| crate::name_index::FIRST_NAME_KEY | key << 24),
        );
        let powers: Vec<u64> = (0..64).map(|bit| 1u64 << bit).collect();
        let dense: Vec<u64> = (1_000..1_190).collect();
        let mut clustered: Vec<u64> = (0..100).collect();
        clustered.extend((0..90).map(|i| u64::MAX - 1_000 + i));
        // Two stable reads a key (its slot, then its bytes).
        let binary = 2.0 * (2.0 + (even.len() as f64).log2());
        let even_reads = search_everything(&even);
        assert!(
            even_reads < 0.6 * binary,
            "{even_reads} reads a search on even keys (a binary search: about {binary})"
        );
        for keys in [&split, &powers, &dense, &clustered, &vec![7], &vec![3, 9]] {
            let reads = search_everything(keys);
            let bound =
                2.0 * (2.0 + search::INTERPOLATED_PROBES as f64 + (keys.len() as f64).log2() + 1.0);
            assert!(reads <= bound, "{reads} reads a search on {keys:?}");
        }
    }

    #[test]
    fn a_full_leaf_has_no_room_and_garbage_is_room_after_a_repack() {
        let memory = memory();
        let mut leaf = Leaf::create(&memory, 0);
        let name = "n".repeat(100);
        let mut id = 0;
        while leaf.room_for(100) == Room::Free {
            leaf.insert(leaf.count(), id, name.as_bytes());
            id += 1;
        }
        assert_eq!(leaf.room_for(100), Room::None);
        assert_eq!(id as usize, USABLE_BYTES / footprint(100));
        leaf.remove(0, &mut UsernameBuf::default()).unwrap();
        assert_eq!(leaf.room_for(100), Room::AfterRepack);
        let leaf = leaf.repack().unwrap();
        assert_eq!(leaf.room_for(100), Room::Free);
    }

    #[test]
    fn a_split_moves_the_upper_share_of_the_bytes_and_keeps_every_record() {
        for (keep, ascending) in [((1, 2), false), ((1, 2), true), ((7, 8), true)] {
            let memory = memory();
            let mut leaf = Leaf::create(&memory, 0);
            // Names of varied lengths; in ascending order or not, until the leaf is full.
            let mut ids: Vec<u64> = (0..2_000).collect();
            if !ascending {
                ids = ids.iter().map(|i| i * 7_919 % 2_000).collect();
            }
            let mut kept = Vec::new();
            for id in ids {
                let name = "x".repeat(1 + (id as usize * 37) % 120);
                if leaf.room_for(name.len()) != Room::Free {
                    break;
                }
                let at = leaf.search(id).unwrap().unwrap_err();
                leaf.insert(at, id, name.as_bytes());
                kept.push(record(id, &name));
            }
            kept.sort_by_key(|record| record.id);
            let mut upper = Leaf::create(&memory, 1);
            let first = leaf.move_upper_part(&mut upper, keep).unwrap();
            let (lower, upper) = (
                Leaf::load(&memory, 0).unwrap(),
                Leaf::load(&memory, 1).unwrap(),
            );
            let (low, high) = (lower.records().unwrap(), upper.records().unwrap());
            assert_eq!(high[0].id, first);
            assert_eq!([low.clone(), high.clone()].concat(), kept, "{keep:?}");
            let bytes = |records: &[Record]| -> usize {
                records
                    .iter()
                    .map(|r| RECORD_HEAD_BYTES + r.username.len())
                    .sum()
            };
            let (moved, total) = (bytes(&high), bytes(&kept));
            assert!(
                moved * keep.1 >= total * (keep.1 - keep.0),
                "{keep:?}: moved {moved}"
            );
            assert!((moved - bytes(&high[..1])) * keep.1 < total * (keep.1 - keep.0));
            // The moved bytes are free space when they were the newest, garbage otherwise.
            assert_eq!(lower.garbage, if ascending { 0 } else { moved }, "{keep:?}");
            assert_eq!(upper.garbage, 0);
            assert_eq!(upper.live_bytes(), moved + high.len() * SLOT_BYTES);
        }
    }

    #[test]
    fn an_overwrite_in_place_takes_a_shorter_name_only() {
        let memory = memory();
        let mut leaf = Leaf::create(&memory, 0);
        leaf.insert(0, 1, b"abcdef");
        assert_eq!(leaf.overwrite(0, b"xy"), Ok(true));
        assert_eq!(leaf.record(0).unwrap(), record(1, "xy"));
        assert_eq!(leaf.overwrite(0, b"longer than before"), Ok(false));
        assert_eq!(leaf.garbage, 4);
    }

    #[test]
    fn a_page_that_is_not_a_leaf_is_refused() {
        let memory = memory();
        page::write(&memory, 0, 0, &[9; 16]);
        assert!(Leaf::load(&memory, 0).is_err());
        page::write(&memory, 0, 0, &[KIND_LEAF, 0, 200, 0, 0, 0, 0, 0]);
        assert!(Leaf::load(&memory, 0).is_err(), "slots past the data");
    }
}
