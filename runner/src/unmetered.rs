//! A module run as is in wasmtime: no counter, no charges, no snapshots; the same engine
//! configuration and ic0 host functions as icrun (`icrun speed`'s baseline).

use crate::live::shared_engine;
use crate::state::{HostState, MessageContext, MessageKind, Response, ANONYMOUS};
use crate::system_api;
use wasmtime::{Instance, Linker, Module, Store};

/// The export canisters keep their heap under.
const MEMORY: &str = "memory";

/// An instance of an uninstrumented module.
pub struct Unmetered {
    store: Store<HostState>,
    instance: Instance,
}

impl Unmetered {
    /// Compiles and instantiates `wasm` as is, then runs `canister_init` with `init_arg`.
    pub fn install(wasm: &[u8], init_arg: &[u8]) -> Result<Unmetered, String> {
        let engine = shared_engine().map_err(|e| e.to_string())?;
        let mut linker = Linker::new(&engine);
        system_api::register(&mut linker).map_err(|e| e.to_string())?;
        let module = Module::new(&engine, wasm).map_err(|e| format!("{e:#}"))?;
        let state = HostState {
            unmetered: true,
            ..HostState::default()
        };
        let mut store = Store::new(&engine, state);
        let instance = linker
            .instantiate(&mut store, &module)
            .map_err(|e| format!("{e:#}"))?;
        let memory = instance.get_memory(&mut store, MEMORY);
        store.data_mut().memory = memory;
        let mut unmetered = Unmetered { store, instance };
        if unmetered
            .instance
            .get_func(&mut unmetered.store, "canister_init")
            .is_some()
        {
            unmetered.call(MessageKind::Init, "canister_init", "", init_arg)?;
        }
        Ok(unmetered)
    }

    /// Runs the update method `method` with `arg`; returns its reply, if it replied.
    pub fn update(&mut self, method: &str, arg: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let export = format!("canister_update {method}");
        self.call(MessageKind::Update, &export, method, arg)
    }

    /// Runs the query method `method` with `arg`; returns its reply, if it replied. Unlike
    /// on icrun, its changes are kept.
    pub fn query(&mut self, method: &str, arg: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let export = format!("canister_query {method}");
        self.call(MessageKind::Query, &export, method, arg)
    }

    /// Runs export `export` as a message of `kind`; returns its reply.
    fn call(
        &mut self,
        kind: MessageKind,
        export: &str,
        method: &str,
        arg: &[u8],
    ) -> Result<Option<Vec<u8>>, String> {
        let context = MessageContext::new(kind, method, arg, ANONYMOUS, u64::MAX);
        self.store.data_mut().msg = context;
        self.store.data_mut().stable.begin();
        let func = self
            .instance
            .get_typed_func::<(), ()>(&mut self.store, export)
            .map_err(|e| format!("{export}: {e}"))?;
        func.call(&mut self.store, ())
            .map_err(|e| format!("{export} trapped: {e:#}"))?;
        self.store.data_mut().stable.commit();
        match self.store.data_mut().msg.response.take() {
            Some(Response::Reply(bytes)) => Ok(Some(bytes)),
            Some(Response::Reject(message)) => Err(format!("{method} rejected: {message}")),
            None => Ok(None),
        }
    }
}
