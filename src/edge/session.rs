//! One request as one session on the data file: parse and authorize, lock, open, check the
//! engine, run, then commit a successful write or roll everything else back ([`serve_on`]),
//! a read announced beside the writer instead of locked when it can ([`crate::edge::readers`]);
//! or, for a store that commits its own writes (the edge peers), parse and authorize, lock,
//! open, run ([`serve_store`]). Both start with the same steps ([`admit`]).

use crate::btree::BTreeStore;
use crate::edge::api::{self, Call, Failure, Info};
use crate::edge::auth;
use crate::edge::config::{EdgeConfig, Engine};
use crate::edge::header;
use crate::edge::http::{Request, Response};
use crate::edge::lock::{Lock, LockSettings};
use crate::edge::readers::{self, Reader, ReaderGate};
use crate::error::StoreError;
use crate::file_memory::CheckpointGate;
use crate::page_tree::PerRequestPageTree;
use crate::store::UserStore;
use ic_stable_structures::Memory;
use serde_json::Value;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

/// The sleep between two watches of a waiter for the lock that is not spinning (one `stat`
/// each): about a one-row request's time, so that a waiter behind the front is watching
/// before its turn (src/edge/lock.rs, "The handoff"). A wasmtime sleep is rounded up to its
/// executor's 1 ms timer tick anyway (tokio's timer has millisecond granularity).
pub const LOCK_RETRY: Duration = Duration::from_millis(2);

/// The time between two looks of a waiter at the lock's whole line (a directory listing, about
/// one host call per file in the data directory): its place, a stale ticket in front, a stale
/// lock. Between looks it watches one file; a stale holder is judged after 30 s by default, so
/// looking this often delays nothing that matters.
pub const LOCK_LOOK: Duration = Duration::from_millis(50);

/// The bytes of one 64 KiB page, the unit `stats` reports the data's size in.
const PAGE_BYTES: u64 = 64 * 1024;

/// What a request read and wrote, reported in the `x-userstore-*` response headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Io {
    /// `fsync`s (or their equivalent).
    pub syncs: u64,
    /// Bytes read from the file.
    pub bytes_read: u64,
    /// Bytes written to the file.
    pub bytes_written: u64,
}

/// A memory whose writes become durable only at a commit: the `FileMemory` the host uses, or
/// a stand-in in tests.
pub trait Durable: Memory + Clone + 'static {
    /// Makes every write since the open or the last commit durable, atomically.
    fn commit(&self) -> Result<(), StoreError>;
    /// Discards every write since the open or the last commit.
    fn rollback(&self);
    /// What was read and written so far.
    fn io(&self) -> Io;
}

/// The lock settings of a host.
pub fn lock_settings(config: &EdgeConfig) -> LockSettings {
    LockSettings {
        epoch: config.host_epoch.clone(),
        stale: config.lock_stale,
        wait: config.lock_wait,
        retry: LOCK_RETRY,
        look: LOCK_LOOK,
        spin: config.lock_spin,
    }
}

/// The steps every session starts with, before any file is touched: parse the request,
/// answer a ping, authorize a write. `Err` is the answer when the session ends there.
fn admit(config: &EdgeConfig, request: &Request) -> Result<Call, Response> {
    let call = api::parse(request).map_err(|failure| api::respond(Err(failure)))?;
    if call == Call::Ping {
        return Err(api::respond(Ok(Value::from("pong"))));
    }
    if call.writes() {
        auth::authorize(config.write_token.as_deref(), request)
            .map_err(|failure| api::respond(Err(failure)))?;
    }
    Ok(call)
}

/// Takes the data file's lock, to be held until the data is closed; `Err` is the answer when
/// it cannot be taken.
fn lock(config: &EdgeConfig, settings: &LockSettings) -> Result<Lock, Response> {
    Lock::acquire(&config.data, settings).map_err(|failure| api::respond(Err(failure)))
}

/// How [`serve_on`] asks its opener for the data file.
pub enum Access {
    /// Holding the lock: the session may write, and its commits checkpoint when `gate` lets
    /// them (it holds checkpoints off while reads run without the lock).
    Exclusive(Rc<dyn CheckpointGate>),
    /// A read announced without the lock ([`crate::edge::readers`]): the memory must never
    /// write the files (a `FileMemory` opened shared).
    Shared,
}

/// Lets every checkpoint run: the gate of a host whose reads all take the lock.
struct NoReaders;

impl CheckpointGate for NoReaders {
    fn enter(&self) -> bool {
        true
    }

    fn leave(&self) {}
}

/// `response` with what the session read and wrote in the `x-userstore-*` headers; without
/// them when nothing was counted.
fn with_io(mut response: Response, io: Option<Io>) -> Response {
    if let Some(io) = io {
        response.set_header("x-userstore-syncs", io.syncs.to_string());
        response.set_header("x-userstore-bytes-read", io.bytes_read.to_string());
        response.set_header("x-userstore-bytes-written", io.bytes_written.to_string());
    }
    response
}

/// Serves one request on the data file `config.data`, opened by `open` as [`Access`] says:
/// a read with `config.shared_reads` announced without the lock when no checkpoint is marked
/// (`Ok(None)` from `open` sends it to the lock: the data needs its writer first), everything
/// else holding the lock, taken before `open` and released after the memory is dropped.
pub fn serve_on<D: Durable>(
    config: &EdgeConfig,
    request: &Request,
    open: impl Fn(&Path, Access) -> Result<Option<D>, StoreError>,
) -> Response {
    let call = match admit(config, request) {
        Ok(call) => call,
        Err(response) => return response,
    };
    let settings = lock_settings(config);
    let mut found_marker = false;
    if config.shared_reads && !call.writes() {
        match Reader::enter(&config.data, &settings) {
            // The announcement is declared before the memory, so it goes after the memory.
            Ok(Some(_reader)) => match open(&config.data, Access::Shared) {
                Ok(Some(memory)) => return answer(config, &call, &memory),
                Ok(None) => {}
                Err(error) => return api::respond(Err(error.into())),
            },
            Ok(None) => found_marker = true,
            Err(failure) => return api::respond(Err(failure)),
        }
    }
    // The lock is declared before the memory, so it is released after the memory is closed.
    let _lock = match lock(config, &settings) {
        Ok(lock) => lock,
        Err(response) => return response,
    };
    if found_marker {
        // Holding the lock, no checkpoint runs: a marker still there was left by a writer
        // that trapped.
        readers::remove_stale_marker(&config.data);
    }
    let gate: Rc<dyn CheckpointGate> = if config.shared_reads {
        Rc::new(ReaderGate::new(&config.data, &settings))
    } else {
        Rc::new(NoReaders)
    };
    match open(&config.data, Access::Exclusive(gate)) {
        Ok(Some(memory)) => answer(config, &call, &memory),
        Ok(None) => api::respond(Err(StoreError::storage(
            "opening the data file",
            "the opener refused it with the lock held",
        )
        .into())),
        Err(error) => api::respond(Err(error.into())),
    }
}

/// Runs `call` on the opened `memory` and answers it, with what the memory read and wrote.
fn answer<D: Durable>(config: &EdgeConfig, call: &Call, memory: &D) -> Response {
    let outcome = run(config, call, memory);
    with_io(api::respond(outcome), Some(memory.io()))
}

/// The `io` of [`serve_store`] for a store that counts nothing: the answer has no
/// `x-userstore-*` headers.
pub fn uncounted<S>(_store: &S) -> Option<Io> {
    None
}

/// Serves one request on the data file `config.data` with the store `open` opens there, a
/// store that commits inside every write call (its own transaction): no commit or rollback
/// around the call, and no engine header (such a store records its engine in its own file and
/// refuses another's). `engine` is the store's name as `config` and `stats` report it; `io`
/// is what the store read, wrote and synced, taken after the call (`None`, as
/// [`uncounted`] answers, omits the `x-userstore-*` headers rather than report zeros).
pub fn serve_store<S: UserStore>(
    config: &EdgeConfig,
    request: &Request,
    engine: &'static str,
    open: impl FnOnce(&Path) -> Result<S, StoreError>,
    io: impl FnOnce(&S) -> Option<Io>,
) -> Response {
    let call = match admit(config, request) {
        Ok(call) => call,
        Err(response) => return response,
    };
    // The lock is declared before the store, so it is released after the store is closed.
    let _lock = match lock(config, &lock_settings(config)) {
        Ok(lock) => lock,
        Err(response) => return response,
    };
    let mut store = match open(&config.data) {
        Ok(store) => store,
        Err(error) => return api::respond(Err(error.into())),
    };
    let info = Info {
        engine,
        writes_enabled: config.write_token.is_some(),
        data_pages: data_pages(&config.data),
    };
    let outcome = api::execute(&mut store, &call, &info);
    let counted = io(&store);
    drop(store);
    with_io(api::respond(outcome.map_err(Into::into)), counted)
}

/// The data file's size in 64 KiB pages, rounded up; 0 if it cannot be read.
fn data_pages(path: &Path) -> u64 {
    std::fs::metadata(path)
        .map(|metadata| metadata.len().div_ceil(PAGE_BYTES))
        .unwrap_or(0)
}

/// Checks the engine, runs the call, and commits it if it is a successful write; rolls back
/// otherwise (a read never commits).
fn run<D: Durable>(config: &EdgeConfig, call: &Call, memory: &D) -> Result<Value, Failure> {
    let outcome = execute(config, call, memory);
    match outcome {
        Ok(value) if call.writes() => match memory.commit() {
            Ok(()) => Ok(value),
            Err(error) => {
                memory.rollback();
                Err(error.into())
            }
        },
        other => {
            memory.rollback();
            other.map_err(Failure::from)
        }
    }
}

/// Opens the engine after the header and runs the call; a successful write closes the
/// engine (the page tree writes its row count).
fn execute<D: Durable>(config: &EdgeConfig, call: &Call, memory: &D) -> Result<Value, StoreError> {
    let engine = config.engine.name();
    header::check_or_record(memory, engine)?;
    let info = Info {
        engine,
        writes_enabled: config.write_token.is_some(),
        data_pages: memory.size(),
    };
    let engine_memory = header::engine_memory(memory.clone());
    match config.engine {
        Engine::PageTree => {
            // A fresh instance opens the table for this request alone: the index is searched
            // in place, not decoded into the heap.
            let mut store = PerRequestPageTree::open_per_request(engine_memory)?;
            let value = api::execute(&mut store, call, &info)?;
            if call.writes() {
                store.close()?;
            }
            Ok(value)
        }
        Engine::BTree => {
            let mut store = BTreeStore::open(engine_memory)?;
            api::execute(&mut store, call, &info)
        }
        #[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
        Engine::StableSqlite => stable_sqlite::execute(call, &info, engine_memory),
        #[cfg(not(any(feature = "sqlite", feature = "stable-sqlite")))]
        Engine::StableSqlite => Err(StoreError::invalid_config(
            "the StableSqlite engine needs SQLite, which this component was built without",
        )),
    }
}

/// The stable-memory SQLite's session: SQLite through this crate's VFS on the engine's pages
/// of the data file, with the in-heap journal (a failed statement rolls back inside the
/// request; the `FileMemory` commit makes the request atomic, as a message is on the IC).
#[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
mod stable_sqlite {
    use crate::edge::api::{self, Call, Info};
    use crate::error::StoreError;
    use crate::stable_sqlite::vfs;
    use crate::StableSqliteStore;
    use ic_stable_structures::Memory;
    use serde_json::Value;

    /// The name the database is registered under with the VFS for one request.
    const DATABASE: &str = "edge.db";

    /// Opens the database on `memory`, runs `call`, closes it and forgets the memory.
    pub fn execute(
        call: &Call,
        info: &Info,
        memory: impl Memory + 'static,
    ) -> Result<Value, StoreError> {
        let opened = StableSqliteStore::open(DATABASE, memory, StableSqliteStore::default_config());
        let outcome = opened.and_then(|mut store| {
            let value = api::execute(&mut store, call, info);
            store.close()?;
            value
        });
        // The next request (in a reused instance) registers its own memory; this one's must
        // not stay behind with its cached pages.
        vfs::unregister_file(DATABASE)
            .map_err(|error| StoreError::storage("closing the database", error))?;
        outcome
    }
}
