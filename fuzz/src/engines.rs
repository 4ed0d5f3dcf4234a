//! Every native engine against a model of the table, on one sequence of operations decoded
//! from the input: the B-tree, the page tree, and SQLite on stable memory with a cache of a
//! few pages, so that its page cache evicts and reloads all the time.

use crate::input::Input;
use ic_stable_structures::VectorMemory;
use userstore::model::ModelStore;
use userstore::{
    limits, BTreeStore, JournalMode, PageTreeStore, PerRequestPageTree, SqliteConfig,
    StableSqliteStore, User, UserStore,
};

/// Ids over a range that fills a few pages of every engine.
const IDS: u32 = 3_000;

/// A username: mostly valid and of every length, sometimes empty or one byte too long, and
/// sometimes one of a few that many users ask for (so that names are taken).
fn username(kind: u8, salt: u32) -> String {
    match kind % 16 {
        0 => String::new(),
        1 => "x".repeat(limits::MAX_USERNAME_BYTES + 1),
        2 => "é".repeat(limits::MAX_USERNAME_BYTES / 2),
        3..=5 => valid_username(kind % 4, salt % 5),
        _ => valid_username(kind, salt),
    }
}

/// A valid username, as long as `length` says, distinct for each `salt`.
fn valid_username(length: u8, salt: u32) -> String {
    let name = format!("user-{salt}-");
    let pad = usize::from(length) % (limits::MAX_USERNAME_BYTES - name.len());
    name + &"u".repeat(pad)
}

/// A run of ids from a few bytes: a start, a stride and a length (up to 255), so that a
/// short input writes many rows; ids wrap within [`IDS`], so a run may repeat one.
fn ids(input: &mut Input<'_>) -> Vec<u64> {
    let (count, start, stride) = (input.byte(), input.below(IDS), 1 + input.below(5));
    (0..u32::from(count))
        .map(|i| u64::from((start + i * stride) % IDS))
        .collect()
}

/// Users on a run of ids, their names of one kind.
fn users(input: &mut Input<'_>) -> Vec<User> {
    let run = ids(input);
    let kind = input.byte();
    let spoil = input.byte();
    run.iter()
        .enumerate()
        .map(|(i, id)| {
            // A batch spoiled by one empty name must be refused whole.
            let name = if spoil == 0 && i == run.len() / 2 {
                String::new()
            } else {
                valid_username(kind.wrapping_add(i as u8), *id as u32)
            };
            User::new(*id, name)
        })
        .collect()
}

/// The engines under test, fresh.
fn engines(memories: &[VectorMemory; 4]) -> Vec<(&'static str, Box<dyn UserStore>)> {
    let stable = SqliteConfig {
        cache_size_pages: 4,
        ..StableSqliteStore::config_with_journal_mode(JournalMode::Memory)
    };
    vec![
        (
            "btree",
            Box::new(BTreeStore::open(memories[0].clone()).expect("the B-tree opens")),
        ),
        (
            "page tree",
            Box::new(PageTreeStore::open(memories[1].clone()).expect("opens")),
        ),
        (
            "page tree opened per request",
            Box::new(PerRequestPageTree::open_per_request(memories[3].clone()).expect("opens")),
        ),
        (
            "stable sqlite, 4-page cache",
            Box::new(
                StableSqliteStore::open(&unique_name(), memories[2].clone(), stable)
                    .expect("opens"),
            ),
        ),
    ]
}

/// A name the VFS has not seen in this process (it keeps registered files).
fn unique_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("fuzz-{}.db", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The model's answer to one operation, and the engines' must be the same.
fn apply(store: &mut dyn UserStore, op: u8, input: &mut Input<'_>) -> String {
    format!(
        "{:?}",
        match op % 7 {
            0 => store.insert_batch(&users(input)).map(|n| n.to_string()),
            1 => store.update_batch(&users(input)).map(|n| n.to_string()),
            2 => store.delete_batch(&ids(input)).map(|n| n.to_string()),
            3 => {
                let id = input.below(IDS);
                let user = User::new(u64::from(id), username(input.byte(), id));
                let name = user.username.clone();
                // And found again by its name.
                store
                    .insert(user)
                    .and_then(|()| store.get_by_name(&name))
                    .map(|user| format!("{user:?}"))
            }
            4 => {
                let id = input.below(IDS);
                let name = username(input.byte(), id);
                store
                    .update_username(u64::from(id), &name)
                    .map(|user| format!("{user:?}"))
            }
            5 => store
                .delete(u64::from(input.below(IDS)))
                .map(|user| format!("{user:?}")),
            _ => store
                .page(Some(u64::from(input.below(IDS))), 1 + input.below(50))
                .map(|page| format!("{page:?}")),
        }
    )
}

/// The target.
pub fn check(bytes: &[u8]) {
    replay(bytes);
}

/// Runs the operations of `bytes` on every engine and the model, and returns the rows left.
pub fn replay(bytes: &[u8]) -> usize {
    let memories = [
        VectorMemory::default(),
        VectorMemory::default(),
        VectorMemory::default(),
        VectorMemory::default(),
    ];
    let mut stores = engines(&memories);
    let mut model = ModelStore::default();
    let mut input = Input::new(bytes);
    while !input.is_empty() {
        let op = input.byte();
        // Each engine decodes the same operation from its own copy of the input.
        let snapshot = input.clone_rest();
        let expected = apply(&mut model, op, &mut input);
        for (name, store) in &mut stores {
            let mut replay = Input::new(snapshot);
            let actual = apply(store.as_mut(), op, &mut replay);
            assert_eq!(actual, expected, "{name} differs from the model");
        }
    }
    let rows = model.page(None, 10_000).expect("the model's table");
    for (name, store) in &stores {
        let all = store.page(None, 10_000).expect("a page");
        assert_eq!(all, rows, "{name}: the whole table");
    }
    rows.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed corpus is worth mutating: it fills several leaves of the page tree and
    /// many more pages than the SQLite engine's cache holds.
    #[test]
    fn the_corpus_fills_many_pages() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/engines");
        let rows: Vec<usize> = std::fs::read_dir(dir)
            .expect("the corpus")
            .map(|file| replay(&std::fs::read(file.expect("a file").path()).expect("reads")))
            .collect();
        assert!(
            rows.iter().any(|&n| n > 1_500),
            "rows left per seed: {rows:?}"
        );
    }
}
