//! A smoke run of the store on a real file, for a WASI host:
//! `wasmtime run --dir <dir>::/data smoke_redb.wasm`.
//! Inserts, reads, updates and deletes a few users in `/data/smoke-redb.db`, reopening the
//! file between calls, and prints what it saw.

use std::path::Path;
use userstore::{StoreError, User, UserStore};
use userstore_redb::RedbStore;

fn main() -> Result<(), StoreError> {
    let path = Path::new("/data/smoke-redb.db");
    let open = || RedbStore::open(path);
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
    println!("redb: {} users, {:?}", store.count()?, store.get(first)?);
    Ok(())
}
