//! One request as one session on the data file: parse and authorize, lock, open, check the
//! engine, run, then commit a successful write or roll everything else back.

use crate::btree::BTreeStore;
use crate::edge::api::{self, Call, Failure, Info};
use crate::edge::auth;
use crate::edge::config::{EdgeConfig, Engine};
use crate::edge::header;
use crate::edge::http::{Request, Response};
use crate::edge::lock::{Lock, LockSettings};
use crate::error::StoreError;
use crate::page_tree::PageTreeStore;
use ic_stable_structures::Memory;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The sleep between two attempts at the lock.
pub const LOCK_RETRY: Duration = Duration::from_millis(2);

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
pub trait Durable: Memory + Clone {
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
    }
}

/// Serves one request on the data file `config.data`, opened by `open` (exclusive access is
/// ensured by the lock, taken before `open` and released after the memory is dropped).
pub fn serve_on<D: Durable>(
    config: &EdgeConfig,
    request: &Request,
    open: impl FnOnce(&Path) -> Result<D, StoreError>,
) -> Response {
    let call = match api::parse(request) {
        Ok(call) => call,
        Err(failure) => return api::respond(Err(failure)),
    };
    if call == Call::Ping {
        return api::respond(Ok(Value::from("pong")));
    }
    if call.writes() {
        if let Err(failure) = auth::authorize(config.write_token.as_deref(), request) {
            return api::respond(Err(failure));
        }
    }
    // Declared before the memory, so it is released after the memory is closed.
    let _lock = match Lock::acquire(&config.data, &lock_settings(config)) {
        Ok(lock) => lock,
        Err(failure) => return api::respond(Err(failure)),
    };
    let memory = match open(&config.data) {
        Ok(memory) => memory,
        Err(error) => return api::respond(Err(error.into())),
    };
    let outcome = run(config, &call, &memory);
    let io = memory.io();
    let mut response = api::respond(outcome);
    response.set_header("x-userstore-syncs", io.syncs.to_string());
    response.set_header("x-userstore-bytes-read", io.bytes_read.to_string());
    response.set_header("x-userstore-bytes-written", io.bytes_written.to_string());
    response
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
            let mut store = PageTreeStore::open(engine_memory)?;
            let value = api::execute(&mut store, call, &info)?;
            if call.writes() {
                store.close()?;
            }
            Ok(value)
        }
        Engine::BTree => {
            let mut store = BTreeStore::init(engine_memory);
            api::execute(&mut store, call, &info)
        }
    }
}
