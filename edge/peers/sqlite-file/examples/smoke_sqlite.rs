//! A smoke run of the store on a real file, for a WASI host:
//! `wasmtime run --dir <dir>::/data smoke_sqlite.wasm [journal mode] [synchronous]`.
//! Inserts, reads, updates and deletes a few users in `/data/smoke-sqlite.db`, reopening the
//! file between calls, and prints what it saw.

use std::path::Path;
use userstore::{StoreError, User, UserStore};
use userstore_sqlite_file::{JournalMode, SqliteFileConfig, SqliteFileStore, Synchronous};

fn main() -> Result<(), StoreError> {
    let mut args = std::env::args().skip(1);
    let config = SqliteFileConfig {
        journal_mode: JournalMode::from_setting(&args.next().unwrap_or_else(|| "delete".into()))?,
        synchronous: Synchronous::from_setting(&args.next().unwrap_or_else(|| "full".into()))?,
    };
    let path = Path::new("/data/smoke-sqlite.db");
    let open = || SqliteFileStore::open_with(path, config);
    let before = open()?.count()?;
    let first = before + 1;
    // Usernames are unique: each run's names carry its first id.
    open()?.insert_batch(&[
        User::new(first, format!("a{first}")),
        User::new(first + 1, format!("b{first}")),
    ])?;
    open()?.update_username(first, &format!("aa{first}"))?;
    open()?.delete(first + 1)?;
    let store = open()?;
    println!(
        "{config:?}: {} users, {:?}",
        store.count()?,
        store.get(first)?
    );
    Ok(())
}
