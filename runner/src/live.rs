//! One instantiated, instrumented module and the operations a message needs on
//! it: set and read the instruction counter, call an export, snapshot and
//! restore the Wasm state.

use crate::errors::ErrorCode;
use crate::function_names::FunctionNames;
use crate::heap::{MemoryGrew, Snapshot};
use crate::instrument::{
    instrument, InstrumentError, Instrumented, COUNTER_EXPORT, GLOBAL_EXPORT_PREFIX, MEMORY_EXPORT,
    TABLE_EXPORT,
};
use crate::memory_tracker::{MemoryTracker, Tracking, TRACKED_PAGE};
use crate::state::{Closure, HostState, HostTrap, MessageKind};
use std::collections::HashMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};
use wasmtime::{Config, Engine, Instance, Linker, Module, Store, Val};

/// Compiled modules kept per process (compiling a canister takes seconds).
const MAX_CACHED_MODULES: usize = 16;

/// The engine every canister of this process shares, so that a compiled
/// module can serve several canisters and upgrades.
pub fn shared_engine() -> Result<Engine, LoadError> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            // Linear memories never move when they grow: the memory tracker
            // protects a fixed address range (a 32-bit memory is reserved
            // whole, 4 GiB, docs/metering.md §7).
            config.memory_may_move(false);
            // Deterministic floats, as the replica configures its engine.
            config.cranelift_nan_canonicalization(true);
            Engine::new(&config).map_err(|e| format!("{e:#}"))
        })
        .clone()
        .map_err(LoadError::Wasm)
}

type ModuleCache = Mutex<HashMap<u64, Arc<Loaded>>>;

fn module_cache() -> &'static ModuleCache {
    static CACHE: OnceLock<ModuleCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn wasm_key(wasm: &[u8], tracing: bool) -> u64 {
    let mut hasher = DefaultHasher::new();
    wasm.hash(&mut hasher);
    tracing.hash(&mut hasher);
    hasher.finish()
}

/// Why a module could not be installed.
#[derive(Debug)]
pub enum LoadError {
    /// The module could not be instrumented.
    Instrument(InstrumentError),
    /// The module imports something the runtime does not provide (the IC
    /// rejects such a module at install).
    UnknownImport {
        /// Import module, e.g. `ic0`.
        module: String,
        /// Import name.
        name: String,
    },
    /// wasmtime rejected the module or could not instantiate it.
    Wasm(String),
    /// The host's OS pages are not 4 KiB, so icrun cannot track the memory pages a message
    /// touches, and every metering profile charges them (docs/metering.md §6).
    PageSize {
        /// The host's OS page size in bytes.
        page_size: usize,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Instrument(e) => write!(f, "{e}"),
            LoadError::UnknownImport { module, name } => write!(
                f,
                "Wasm module has an invalid import section. Module imports function '{name}' from '{module}' that is not exported by the runtime."
            ),
            LoadError::Wasm(msg) => write!(f, "Wasm module could not be loaded: {msg}"),
            LoadError::PageSize { page_size } => write!(
                f,
                "icrun cannot meter on this host: its OS page size is {page_size} bytes, not \
                 {TRACKED_PAGE}. The page charges of docs/metering.md §6 are defined per 4 KiB \
                 OS page, and icrun tracks them with mprotect at that granularity; with larger \
                 pages they would be wrong without notice."
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// A compiled, instrumented module, shared by all instances of it.
pub(crate) struct Loaded {
    /// The module as given (its custom sections are read from here).
    pub original: Vec<u8>,
    /// Facts from the instrumentation.
    pub info: Instrumented,
    /// The compiled instrumented module.
    pub module: Module,
    /// Export names of the mutable globals (`__icrun_global_<i>`).
    pub global_exports: Vec<String>,
    /// Function names for traces (empty without tracing).
    pub names: Arc<FunctionNames>,
}

impl Loaded {
    /// Instruments (with trace hooks when `tracing`) and compiles `wasm`, and checks every
    /// import is provided by `linker`.
    pub fn new(
        engine: &Engine,
        linker: &Linker<HostState>,
        wasm: &[u8],
        tracing: bool,
    ) -> Result<Arc<Loaded>, LoadError> {
        let info = instrument(wasm, tracing).map_err(LoadError::Instrument)?;
        let module =
            Module::new(engine, &info.wasm).map_err(|e| LoadError::Wasm(format!("{e:#}")))?;
        let mut probe = Store::new(engine, HostState::default());
        for import in module.imports() {
            if linker.get_by_import(&mut probe, &import).is_none() {
                return Err(LoadError::UnknownImport {
                    module: import.module().to_string(),
                    name: import.name().to_string(),
                });
            }
        }
        let global_exports = module
            .exports()
            .filter(|e| e.name().starts_with(GLOBAL_EXPORT_PREFIX))
            .map(|e| e.name().to_string())
            .collect();
        let names = if tracing {
            Arc::new(FunctionNames::of(wasm))
        } else {
            Arc::default()
        };
        Ok(Arc::new(Loaded {
            original: wasm.to_vec(),
            info,
            module,
            global_exports,
            names,
        }))
    }

    /// Like [`Loaded::new`], reusing the compiled module when the same bytes
    /// were loaded before in this process on `engine` (which must be
    /// [`shared_engine`]; `linker` must come from [`crate::system_api::register`]).
    pub fn cached(
        engine: &Engine,
        linker: &Linker<HostState>,
        wasm: &[u8],
        tracing: bool,
    ) -> Result<Arc<Loaded>, LoadError> {
        let key = wasm_key(wasm, tracing);
        if let Ok(cache) = module_cache().lock() {
            let hit = cache
                .get(&key)
                .filter(|l| l.original == wasm && l.info.tracing == tracing);
            if let Some(hit) = hit {
                return Ok(Arc::clone(hit));
            }
        }
        let loaded = Loaded::new(engine, linker, wasm, tracing)?;
        if let Ok(mut cache) = module_cache().lock() {
            if cache.len() >= MAX_CACHED_MODULES {
                cache.clear();
            }
            cache.insert(key, Arc::clone(&loaded));
        }
        Ok(loaded)
    }

    /// Names of the exported functions starting with `prefix`, prefix removed.
    pub fn exported_functions(&self, prefix: &str) -> Vec<String> {
        self.module
            .exports()
            .filter(|e| e.ty().func().is_some())
            .filter_map(|e| e.name().strip_prefix(prefix).map(str::to_string))
            .collect()
    }

    /// Whether the module exports a function named `name`.
    pub fn exports_function(&self, name: &str) -> bool {
        self.module
            .get_export(name)
            .is_some_and(|e| e.func().is_some())
    }
}

/// How a call into the canister failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The instruction counter went negative.
    OutOfInstructions,
    /// Any other trap: the replica's error code and message.
    Trap(ErrorCode, String),
}

/// An instance of a [`Loaded`] module in its own store.
pub(crate) struct Live {
    /// The store; its data is the canister's [`HostState`].
    pub store: Store<HostState>,
    /// The instance.
    pub instance: Instance,
    /// The module it instantiates.
    pub loaded: Arc<Loaded>,
    /// Page tracking of the heap (none without Unix signals).
    tracker: Option<Arc<MemoryTracker>>,
}

impl Live {
    /// Instantiates `loaded` in a new store holding `state`; on failure the
    /// state is handed back.
    pub fn new(
        engine: &Engine,
        linker: &Linker<HostState>,
        loaded: Arc<Loaded>,
        state: HostState,
    ) -> Result<Live, Box<(LoadError, HostState)>> {
        // Every metering profile charges heap pages the tracker sees (docs/metering.md §6).
        if let Err(e) = check_page_size(os_page_size()) {
            return Err(Box::new((e, state)));
        }
        let mut store = Store::new(engine, state);
        // `memory.grow` asks the message's memory limits (none between messages).
        store.limiter(|state| &mut state.memory_limits);
        let instance = match linker.instantiate(&mut store, &loaded.module) {
            Ok(instance) => instance,
            Err(e) => {
                return Err(Box::new((
                    LoadError::Wasm(format!("{e:#}")),
                    store.into_data(),
                )))
            }
        };
        let counter = instance.get_global(&mut store, COUNTER_EXPORT);
        let memory = instance.get_memory(&mut store, MEMORY_EXPORT);
        store.data_mut().counter = counter;
        store.data_mut().memory = memory;
        let tracker = install_memory_tracker(&mut store);
        store.data_mut().tracker = tracker.clone();
        Ok(Live {
            store,
            instance,
            loaded,
            tracker,
        })
    }

    /// Sets the instruction counter (the message's remaining budget).
    pub fn set_counter(&mut self, value: i64) {
        if let Some(counter) = self.store.data().counter {
            // The counter is a mutable i64 global the instrumentation created.
            let _ = counter.set(&mut self.store, Val::I64(value));
        }
    }

    /// Current value of the instruction counter.
    pub fn counter(&mut self) -> i64 {
        match self.store.data().counter {
            Some(counter) => counter.get(&mut self.store).i64().unwrap_or(0),
            None => 0,
        }
    }

    /// Calls the exported function `name` (type `[] -> []`).
    pub fn call(&mut self, name: &str) -> Result<(), Failure> {
        let func = self
            .instance
            .get_typed_func::<(), ()>(&mut self.store, name)
            .map_err(|e| {
                Failure::Trap(
                    ErrorCode::CanisterContractViolation,
                    format!("Canister export '{name}' is unusable: {e}"),
                )
            })?;
        func.call(&mut self.store, ()).map_err(failure_of)
    }

    /// Calls the callback `table[closure.fun](closure.env)` (type `[i32] -> []`,
    /// `[i64] -> []` on wasm64), as the replica calls inter-canister callbacks:
    /// through the exported table, so no `call_indirect` is charged. A missing
    /// entry (e.g. ic-cdk's one-way calls, index `u32::MAX`), a null entry or
    /// a wrong signature fail with the replica's errors (its wasmtime
    /// embedder: `FunctionNotFound(0, index)` and contract violations).
    pub fn call_closure(&mut self, closure: Closure) -> Result<(), Failure> {
        let violation = |what: &str| {
            Failure::Trap(
                ErrorCode::CanisterContractViolation,
                format!("Canister violated contract: {what}"),
            )
        };
        let Some(table) = self.instance.get_table(&mut self.store, TABLE_EXPORT) else {
            return Err(violation("table not found"));
        };
        let Some(entry) = table.get(&mut self.store, u64::from(closure.fun)) else {
            return Err(Failure::Trap(
                ErrorCode::CanisterFunctionNotFound,
                format!(
                    "Canister requested to invoke a non-existent Wasm function {} from table 0",
                    closure.fun
                ),
            ));
        };
        let Some(func) = entry.as_func().flatten().copied() else {
            return Err(violation("unexpected null function reference"));
        };
        let mismatch = |_| violation("function invocation does not match its signature");
        let outcome = if self.loaded.info.memory64 {
            func.typed::<i64, ()>(&self.store)
                .map_err(mismatch)?
                .call(&mut self.store, closure.env as i64)
        } else {
            func.typed::<i32, ()>(&self.store)
                .map_err(mismatch)?
                .call(&mut self.store, closure.env as i32)
        };
        outcome.map_err(failure_of)
    }

    /// Starts a message of `kind`: records what is needed to undo it (see [`Snapshot`]) and
    /// starts tracking the heap pages it touches as the metering profile needs.
    pub fn begin(&mut self, kind: MessageKind) -> Snapshot {
        let pages = self.store.data().metering.pages();
        let tracking = if pages.tracks_regions() {
            Tracking::Regions {
                access: pages.region_access,
                write: pages.region_write,
                track_writes: kind.persists(),
            }
        } else {
            Tracking::Writes
        };
        Snapshot::take(
            &mut self.store,
            &self.instance,
            &self.loaded.global_exports,
            self.tracker.as_ref(),
            tracking,
        )
    }

    /// The globals and heap size now (between messages).
    pub fn globals_snapshot(&mut self) -> Snapshot {
        Snapshot::of_globals(&mut self.store, &self.instance, &self.loaded.global_exports)
    }

    /// Whether the heap's pages are tracked (needed by [`crate::Metering::Current`]).
    pub fn tracks_pages(&self) -> bool {
        self.tracker.is_some()
    }

    /// Heap pages dirtied since `snapshot` was taken (before [`Live::finish`]).
    pub fn dirty_pages(&self, snapshot: &Snapshot) -> u64 {
        snapshot.dirty_pages(&self.store, self.tracker.as_ref())
    }

    /// Ends write tracking; the message's writes stay undoable.
    pub fn finish(&mut self, snapshot: &Snapshot) {
        snapshot.finish(self.tracker.as_ref());
    }

    /// Keeps the message's writes.
    pub fn commit(&mut self, snapshot: &Snapshot) {
        snapshot.commit(self.tracker.as_ref());
    }

    /// Undoes the message; fails if the memory grew (see [`MemoryGrew`]).
    pub fn restore(&mut self, snapshot: &Snapshot) -> Result<(), MemoryGrew> {
        snapshot.restore(&mut self.store, &self.instance, self.tracker.as_ref())
    }

    /// The first `len` bytes of the heap.
    pub fn heap_prefix(&self, len: usize) -> Vec<u8> {
        // The tracker may have left pages inaccessible; make them readable first.
        if let Some(tracker) = &self.tracker {
            tracker.unprotect_all();
        }
        match self.store.data().memory {
            Some(memory) => memory.data(&self.store).get(..len).unwrap_or(&[]).to_vec(),
            None => Vec::new(),
        }
    }

    /// Puts `heap` (the old instance's restored heap, see [`Live::restore`])
    /// and the globals of `snapshot` into this fresh instance.
    pub fn adopt(&mut self, heap: &[u8], snapshot: &Snapshot) -> Result<(), MemoryGrew> {
        snapshot.restore_into_fresh(heap, &mut self.store, &self.instance)
    }

    /// Current heap size in bytes.
    pub fn heap_bytes(&self) -> usize {
        match self.store.data().memory {
            Some(memory) => memory.data_size(&self.store),
            None => 0,
        }
    }

    /// Takes the host state out, leaving a default one (the store is then unusable).
    pub fn take_state(&mut self) -> HostState {
        std::mem::take(self.store.data_mut())
    }
}

/// Whether icrun can meter on a host whose OS pages are `page_size` bytes: only with 4 KiB
/// pages. docs/metering.md §6 defines the page charges per 4 KiB OS page (`pocketic-13`'s
/// dirty pages, `current`'s 16 OS pages per 64 KiB Wasm page), and the memory tracker finds
/// them with `mprotect`, whose granularity is the OS page: with larger pages it would see
/// the wrong pages, and without it the charges would silently differ from the replica's.
pub(crate) fn check_page_size(page_size: usize) -> Result<(), LoadError> {
    if page_size == TRACKED_PAGE {
        Ok(())
    } else {
        Err(LoadError::PageSize { page_size })
    }
}

/// The host's OS page size.
#[cfg(unix)]
fn os_page_size() -> usize {
    MemoryTracker::os_page_size()
}

/// Without Unix signals there is no page tracking whatever the page size (see
/// `install_memory_tracker`); the size does not decide anything there.
#[cfg(not(unix))]
fn os_page_size() -> usize {
    TRACKED_PAGE
}

/// Installs the page-tracking fault handler on `store` (the host's pages are 4 KiB, see
/// [`check_page_size`]).
#[cfg(unix)]
fn install_memory_tracker(store: &mut Store<HostState>) -> Option<Arc<MemoryTracker>> {
    use wasmtime::unix::StoreExt;
    let tracker = Arc::new(MemoryTracker::new());
    let in_handler = Arc::clone(&tracker);
    let handler =
        move |signal: libc::c_int, info: *const libc::siginfo_t, _: *const libc::c_void| {
            if signal != libc::SIGSEGV && signal != libc::SIGBUS {
                return false;
            }
            // SAFETY: the kernel passes a valid siginfo for SIGSEGV/SIGBUS.
            let address = unsafe { (*info).si_addr() } as usize;
            in_handler.on_fault(address)
        };
    // SAFETY: the handler only resolves faults inside the tracked memory of
    // this store (see `MemoryTracker`) and declines every other fault.
    unsafe { store.set_signal_handler(handler) };
    Some(tracker)
}

/// Without Unix signals there is no page tracking: snapshots copy the heap.
#[cfg(not(unix))]
fn install_memory_tracker(_store: &mut Store<HostState>) -> Option<Arc<MemoryTracker>> {
    None
}

/// Converts a wasmtime error from a call into the replica's kind of message.
pub(crate) fn failure_of(error: wasmtime::Error) -> Failure {
    if let Some(host) = error.downcast_ref::<HostTrap>() {
        return match host {
            HostTrap::OutOfInstructions => Failure::OutOfInstructions,
            other => Failure::Trap(other.error_code(), other.to_string()),
        };
    }
    let trapped = |text: String| Failure::Trap(ErrorCode::CanisterTrapped, text);
    if let Some(trap) = error.downcast_ref::<wasmtime::Trap>() {
        return trapped(format!("Canister trapped: {}", trap_text(trap)));
    }
    trapped(format!("Canister trapped: {error}"))
}

/// The replica's wording of a Wasm trap.
fn trap_text(trap: &wasmtime::Trap) -> String {
    use wasmtime::Trap;
    match trap {
        Trap::UnreachableCodeReached => "unreachable".into(),
        Trap::MemoryOutOfBounds => "heap out of bounds".into(),
        Trap::IntegerDivisionByZero => "integer division by 0".into(),
        Trap::IntegerOverflow => "integer overflow".into(),
        Trap::BadConversionToInteger => "invalid conversion to integer".into(),
        Trap::StackOverflow => "stack overflow".into(),
        Trap::TableOutOfBounds => "table out of bounds".into(),
        Trap::IndirectCallToNull => "uninitialized element".into(),
        Trap::BadSignature => "indirect call signature mismatch".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_4_kib_pages_can_be_tracked() {
        assert!(check_page_size(4096).is_ok());
        for page_size in [16_384, 65_536, 8_192, 0] {
            let refused = check_page_size(page_size);
            assert!(
                matches!(refused, Err(LoadError::PageSize { page_size: p }) if p == page_size),
                "{page_size}: {refused:?}"
            );
        }
        let message = LoadError::PageSize { page_size: 16_384 }.to_string();
        for needle in ["16384 bytes", "docs/metering.md §6", "4 KiB", "mprotect"] {
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn this_host_can_meter() {
        // The test machines have 4 KiB pages; elsewhere every install fails with PageSize.
        assert!(check_page_size(os_page_size()).is_ok());
    }
}
