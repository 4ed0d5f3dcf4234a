//! What this crate relies on of ic-stable-structures' private stable-memory formats, in one
//! place: the `MemoryManager`'s header and bucket geometry, and the magic bytes a
//! `StableCell` and a `StableBTreeMap` start with.
//!
//! ic-stable-structures does not publish these; the canister layout reads them to find
//! where the memory manager ends (the B-tree's region starts after its first bucket), to
//! tell whether stable memory holds the canister's settings, and to work out which engine
//! wrote a canister installed before the engine was recorded. A version bump of the
//! dependency that moves any of them must fail this module's tests, loudly, before it
//! reaches a canister: see `the_formats_are_the_dependency's` below.

use ic_stable_structures::Memory;

/// The ic-stable-structures release line these formats were read from (its `Cargo.toml`
/// version is `0.7.x`); the tests check it against the version `Cargo.lock` resolves.
pub const STABLE_STRUCTURES_VERSION: &str = "0.7";

/// The bytes a 64 KiB Wasm page holds: the unit of stable memory (docs/metering.md §5).
pub const WASM_PAGE_BYTES: u64 = 64 * 1024;

/// The first bytes of a `MemoryManager`'s header.
const MANAGER_MAGIC: &[u8; 3] = b"MGR";

/// Pages of stable memory before a `MemoryManager`'s first bucket: its header page
/// (`BUCKETS_OFFSET_IN_PAGES` in ic-stable-structures 0.7).
pub const MANAGER_HEADER_PAGES: u64 = 1;

/// Wasm pages of one bucket of a `MemoryManager` (`BUCKET_SIZE_IN_PAGES` in
/// ic-stable-structures 0.7; a manager created with another size records it in its header,
/// which [`manager_end_page`] reads).
pub const MANAGER_BUCKET_PAGES: u64 = 128;

/// The first bytes of a `StableCell`.
pub const STABLE_CELL_MAGIC: &[u8; 3] = b"SCL";

/// The first bytes of a `StableBTreeMap`.
pub const BTREE_MAP_MAGIC: &[u8; 3] = b"BTR";

/// The first Wasm page past everything a `MemoryManager` at page 0 of `memory` has handed
/// out (its header page and its buckets), read from its header (ic-stable-structures 0.7:
/// magic, layout version, then the number of allocated buckets and the bucket size in
/// pages, little-endian `u16`s); `Some(0)` when the memory is empty, `None` when it does not
/// start with a manager.
pub fn manager_end_page(memory: &impl Memory) -> Option<u64> {
    if memory.size() == 0 {
        return Some(0);
    }
    let mut header = [0; 8];
    memory.read(0, &mut header);
    if &header[..3] != MANAGER_MAGIC {
        return None;
    }
    let buckets = u64::from(u16::from_le_bytes([header[4], header[5]]));
    let bucket_pages = u64::from(u16::from_le_bytes([header[6], header[7]]));
    Some(MANAGER_HEADER_PAGES + buckets * bucket_pages)
}

/// Where a `MemoryManager`'s header keeps the size of each virtual memory: after the magic,
/// the version, the bucket count and size (8 bytes) and 32 reserved bytes, one little-endian
/// `u64` of Wasm pages per memory id (its `#[repr(C, packed)] struct Header`).
const MANAGER_MEMORY_SIZES_OFFSET: u64 = 40;

/// The size in Wasm pages of virtual memory `id` of the `MemoryManager` at page 0 of
/// `memory`, as its header records it; `None` when the memory does not start with a
/// manager.
pub fn virtual_memory_pages(memory: &impl Memory, id: u8) -> Option<u64> {
    manager_end_page(memory).filter(|end| *end > 0)?;
    let mut size = [0; 8];
    memory.read(MANAGER_MEMORY_SIZES_OFFSET + 8 * u64::from(id), &mut size);
    Some(u64::from_le_bytes(size))
}

/// Where a `MemoryManager`'s header keeps which memory owns each bucket: right after the
/// 255 memory sizes, one byte per bucket (255 for a bucket no memory owns).
const MANAGER_BUCKET_OWNERS_OFFSET: u64 = MANAGER_MEMORY_SIZES_OFFSET + 255 * 8;

/// The virtual memory whose bucket holds Wasm page `page` of `memory`, as the header of the
/// `MemoryManager` at its page 0 records it; `None` for the header page, a page past the
/// manager's buckets, or memory without a manager.
pub fn bucket_owner(memory: &impl Memory, page: u64) -> Option<u8> {
    let end = manager_end_page(memory).filter(|end| *end > 0)?;
    if page < MANAGER_HEADER_PAGES || page >= end {
        return None;
    }
    let mut header = [0; 8];
    memory.read(0, &mut header);
    let bucket_pages = u64::from(u16::from_le_bytes([header[6], header[7]]));
    let bucket = (page - MANAGER_HEADER_PAGES) / bucket_pages.max(1);
    let mut owner = [0; 1];
    memory.read(MANAGER_BUCKET_OWNERS_OFFSET + bucket, &mut owner);
    (owner[0] != u8::MAX).then_some(owner[0])
}

/// Whether `memory` starts with `magic`.
pub fn starts_with(memory: &impl Memory, magic: &[u8; 3]) -> bool {
    if memory.size() == 0 {
        return false;
    }
    let mut first = [0u8; 3];
    memory.read(0, &mut first);
    &first == magic
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::memory_manager::{MemoryId, MemoryManager};
    use ic_stable_structures::{StableBTreeMap, StableCell, VectorMemory};

    /// The version `Cargo.lock` resolves ic-stable-structures to.
    fn locked_version() -> String {
        let lock = include_str!("../../Cargo.lock");
        let entry = lock
            .split("[[package]]")
            .find(|entry| entry.contains("name = \"ic-stable-structures\""))
            .expect("Cargo.lock lists ic-stable-structures");
        let version = entry
            .lines()
            .find_map(|line| line.strip_prefix("version = \""))
            .expect("a version line");
        version.trim_end_matches('"').to_string()
    }

    #[test]
    fn the_formats_are_the_dependency_s() {
        let locked = locked_version();
        assert!(
            locked.starts_with(&format!("{STABLE_STRUCTURES_VERSION}.")),
            "ic-stable-structures is now {locked}: read its memory_manager.rs, cell.rs and \
             btreemap.rs again, check every format this module names, then update \
             STABLE_STRUCTURES_VERSION"
        );

        // A manager with one memory in its first bucket, then another in its second.
        let memory = VectorMemory::default();
        let manager = MemoryManager::init(memory.clone());
        assert_eq!(manager_end_page(&memory), Some(MANAGER_HEADER_PAGES));
        let first = manager.get(MemoryId::new(0));
        StableCell::init(first.clone(), 7u64);
        assert_eq!(
            manager_end_page(&memory),
            Some(MANAGER_HEADER_PAGES + MANAGER_BUCKET_PAGES)
        );
        assert!(starts_with(&first, STABLE_CELL_MAGIC));
        // The first bucket starts right after the header page.
        let mut at_bucket = [0u8; 3];
        memory.read(MANAGER_HEADER_PAGES * WASM_PAGE_BYTES, &mut at_bucket);
        assert_eq!(&at_bucket, STABLE_CELL_MAGIC);

        assert_eq!(virtual_memory_pages(&memory, 0), Some(first.size()));
        first.grow(3);
        assert_eq!(virtual_memory_pages(&memory, 0), Some(first.size()));
        assert_eq!(virtual_memory_pages(&memory, 9), Some(0));

        let second = manager.get(MemoryId::new(1));
        let _map: StableBTreeMap<u64, u64, _> = StableBTreeMap::init(second.clone());
        assert!(starts_with(&second, BTREE_MAP_MAGIC));
        assert_eq!(
            manager_end_page(&memory),
            Some(MANAGER_HEADER_PAGES + 2 * MANAGER_BUCKET_PAGES)
        );
        // Which memory owns each page: the header, memory 0's bucket, memory 1's bucket.
        assert_eq!(bucket_owner(&memory, 0), None);
        assert_eq!(bucket_owner(&memory, MANAGER_HEADER_PAGES), Some(0));
        assert_eq!(bucket_owner(&memory, MANAGER_BUCKET_PAGES), Some(0));
        assert_eq!(bucket_owner(&memory, MANAGER_BUCKET_PAGES + 1), Some(1));
        assert_eq!(
            bucket_owner(&memory, MANAGER_HEADER_PAGES + 2 * MANAGER_BUCKET_PAGES),
            None
        );
    }

    #[test]
    fn memory_without_a_manager_is_told_apart() {
        let memory = VectorMemory::default();
        assert_eq!(manager_end_page(&memory), Some(0));
        assert!(!starts_with(&memory, STABLE_CELL_MAGIC));
        memory.grow(1);
        memory.write(0, b"SQLite format 3");
        assert_eq!(manager_end_page(&memory), None);
        assert_eq!(virtual_memory_pages(&memory, 0), None);
    }
}
