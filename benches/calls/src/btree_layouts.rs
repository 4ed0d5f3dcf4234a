//! Why the B-tree's table takes more than twice its bytes once names are indexed: the aged
//! table of the per-call suite built natively, once by the engine itself ([`BTreeStore`]) and
//! once per layout of a plain `StableBTreeMap` that could hold the same index, and the bytes
//! per row of each (`bench-calls --btree-layouts ROWS <results.yml>`, `docs/floor.md`
//! "Bytes of the index").
//!
//! `StableBTreeMap` (0.7) gives every node of a map one page, sized from the largest key
//! and value its types declare (3/4 of the largest node), and moves a node that outgrows it
//! into overflow pages. One map holds the rows and the index here (`name_index`), so the
//! index's entries (an id beside the name) set the page of every node, the rows' too.
//!
//! The bytes are the memory's pages (64 KiB each) per row, as `engine_bytes_per_row` counts
//! the canister's region ([`crate::storage`]).

use crate::tables::{fill_batch, TableState};
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableBTreeMap, Storable, VectorMemory};
use serde::Serialize;
use std::borrow::Cow;
use std::path::Path;
use userstore::limits::MAX_USERNAME_BYTES;
use userstore::name_index::{self, FIRST_NAME_KEY};
use userstore::{BTreeStore, UserStore};
use userstore_benches::tables::{preloaded_user, ID_STEP};

/// Bytes of a memory page of the IC (and of `VectorMemory`).
const PAGE_BYTES: u64 = 65_536;

/// Bits of an index key below its bucket (`name_index`'s slots; any key above the ids in
/// the hash's order sorts as the engine's do).
const SLOT_BITS: u32 = 24;

/// Bytes of the name's hash in a fingerprint entry.
const FINGERPRINT_BYTES: usize = 4;

/// The bytes per row of one layout.
#[derive(Debug, Serialize)]
struct Layout {
    /// What the map holds and how its values are bounded.
    layout: &'static str,
    /// Bytes of the memory per row, to one decimal.
    bytes_per_row: f64,
    /// `bytes_per_row` over the rows-only layout's.
    ratio_to_rows_only: f64,
    /// What a lookup by name reads.
    lookup_by_name: &'static str,
}

/// The sweep's results file.
#[derive(Debug, Serialize)]
struct Results {
    /// Rows of the table (aged order, names of the per-call suite).
    rows: u64,
    /// One entry per layout, the rows-only one first.
    layouts: Vec<Layout>,
}

/// How a layout bounds its map's values, the bound every node's page is sized from.
trait ValueBound {
    /// The bound the map's value type declares.
    const BOUND: Bound;
}

/// Values of at most `N` bytes.
struct AtMost<const N: u32>;

impl<const N: u32> ValueBound for AtMost<N> {
    const BOUND: Bound = Bound::Bounded {
        max_size: N,
        is_fixed_size: false,
    };
}

/// Values of any length: nodes get ic-stable-structures' default page (1 KiB).
struct AnyLength;

impl ValueBound for AnyLength {
    const BOUND: Bound = Bound::Unbounded;
}

/// A map value under bound `B`.
struct Bytes<B: ValueBound>(Vec<u8>, std::marker::PhantomData<B>);

impl<B: ValueBound> Bytes<B> {
    fn new(bytes: Vec<u8>) -> Self {
        Self(bytes, std::marker::PhantomData)
    }
}

impl<B: ValueBound> Storable for Bytes<B> {
    const BOUND: Bound = B::BOUND;

    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.0)
    }

    fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        Self::new(bytes.into_owned())
    }
}

/// What an index entry holds beside its key.
#[derive(Clone, Copy)]
enum IndexEntry {
    /// No index: the release before names were indexed.
    None,
    /// The id and the name, as the engine's: a lookup by name reads this entry alone.
    IdAndName,
    /// The id and a hash of the name: a lookup by name must read the row too.
    IdAndFingerprint,
}

/// The ids of the aged table of `rows`, in the batches the canister is filled in.
fn aged_batches(rows: u64) -> Vec<Vec<u64>> {
    TableState::Aged
        .insertion_order(rows)
        .chunks(fill_batch(rows))
        .map(|batch| batch.iter().map(|position| position * ID_STEP).collect())
        .collect()
}

/// Bytes per row of `memory` holding `rows`.
fn per_row(memory: &VectorMemory, rows: u64) -> f64 {
    let bytes = memory.size() * PAGE_BYTES;
    (bytes as f64 / rows as f64 * 10.0).round() / 10.0
}

/// Fills a map of values bounded by `B` with the rows and the `entry` of each, in the
/// aged order, and returns its bytes per row.
fn plain_map<B: ValueBound>(rows: u64, entry: IndexEntry) -> f64 {
    let memory = VectorMemory::default();
    let mut map: StableBTreeMap<u64, Bytes<B>, VectorMemory> = StableBTreeMap::new(memory.clone());
    for id in aged_batches(rows).into_iter().flatten() {
        let user = preloaded_user(id);
        let name = user.username.as_bytes();
        map.insert(id, Bytes::new(name.to_vec()));
        let mut indexed = id.to_le_bytes().to_vec();
        match entry {
            IndexEntry::None => continue,
            IndexEntry::IdAndName => indexed.extend_from_slice(name),
            IndexEntry::IdAndFingerprint => {
                let hash = name_index::bucket_of(&user.username).to_le_bytes();
                indexed.extend_from_slice(&hash[..FINGERPRINT_BYTES]);
            }
        }
        let key = FIRST_NAME_KEY | (name_index::bucket_of(&user.username) << SLOT_BITS);
        map.insert(key, Bytes::new(indexed));
    }
    per_row(&memory, rows)
}

/// The engine's own bytes per row, filled as the canister is (`insert_users` batches).
fn engine(rows: u64) -> Result<f64, String> {
    let memory = VectorMemory::default();
    let mut store = BTreeStore::open(memory.clone()).map_err(|e| e.to_string())?;
    for batch in aged_batches(rows) {
        let users: Vec<_> = batch.into_iter().map(preloaded_user).collect();
        store.insert_batch(&users).map_err(|e| e.to_string())?;
    }
    Ok(per_row(&memory, rows))
}

/// The bound of a map holding rows alone: the longest username.
const ROW_BOUND: u32 = MAX_USERNAME_BYTES as u32;

/// The bound of a map whose index entries hold an id and a name: the engine's.
const ENTRY_BOUND: u32 = name_index::MAX_VALUE_BYTES as u32;

/// Measures every layout on the aged table of `rows` and writes them to `results`.
pub fn measure(rows: u64, results: &Path) -> Result<(), String> {
    if rows == 0 {
        return Err("--btree-layouts needs at least one row".into());
    }
    let rows_only = plain_map::<AtMost<ROW_BOUND>>(rows, IndexEntry::None);
    let measured: Vec<(&'static str, f64, &'static str)> = vec![
        (
            "rows alone, values of at most 128 bytes (the release before the index)",
            rows_only,
            "no index",
        ),
        (
            "the engine (BTreeStore): rows and index entries of an id and a name, values of at \
             most 136 bytes",
            engine(rows)?,
            "one entry",
        ),
        (
            "rows and index entries of an id and a name, values of at most 136 bytes",
            plain_map::<AtMost<ENTRY_BOUND>>(rows, IndexEntry::IdAndName),
            "one entry",
        ),
        (
            "rows and index entries of an id and a name, values of at most 128 bytes (names \
             past 120 bytes would need the row)",
            plain_map::<AtMost<ROW_BOUND>>(rows, IndexEntry::IdAndName),
            "one entry",
        ),
        (
            "rows and index entries of an id and a name, values unbounded (1 KiB pages)",
            plain_map::<AnyLength>(rows, IndexEntry::IdAndName),
            "one entry",
        ),
        (
            "rows and index entries of an id and a 4-byte hash of the name, values of at most \
             128 bytes",
            plain_map::<AtMost<ROW_BOUND>>(rows, IndexEntry::IdAndFingerprint),
            "one entry, then the row",
        ),
    ];
    let layouts = measured
        .into_iter()
        .map(|(layout, bytes_per_row, lookup_by_name)| Layout {
            layout,
            bytes_per_row,
            ratio_to_rows_only: (bytes_per_row / rows_only * 1000.0).round() / 1000.0,
            lookup_by_name,
        })
        .collect::<Vec<_>>();
    for layout in &layouts {
        println!(
            "{:>8.1} bytes a row  {:>6.3}×  {}",
            layout.bytes_per_row, layout.ratio_to_rows_only, layout.layout
        );
    }
    let yaml = serde_yaml::to_string(&Results { rows, layouts }).map_err(|e| e.to_string())?;
    let header = format!(
        "# Written by bench-calls --btree-layouts {rows} {} (docs/floor.md, \"Bytes of the \
         index\").\n",
        results.display()
    );
    std::fs::write(results, header + &yaml)
        .map_err(|e| format!("writing {}: {e}", results.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain map given the engine's layout stands for the engine: the same bytes within
    /// a node's share, so the other layouts measure what the engine would take.
    #[test]
    fn the_plain_map_of_the_engine_s_layout_takes_the_engine_s_bytes() {
        let rows = 20_000;
        let engine = engine(rows).unwrap();
        let plain = plain_map::<AtMost<ENTRY_BOUND>>(rows, IndexEntry::IdAndName);
        assert!(
            (engine - plain).abs() / engine < 0.01,
            "engine {engine} bytes a row, plain map {plain}"
        );
        let rows_only = plain_map::<AtMost<ROW_BOUND>>(rows, IndexEntry::None);
        assert!(plain > 2.0 * rows_only, "{plain} against {rows_only}");
    }

    #[test]
    fn an_empty_table_is_refused() {
        let results = std::env::temp_dir().join("btree_layouts_empty.yml");
        assert!(measure(0, &results).is_err());
        assert!(!results.exists());
    }
}
