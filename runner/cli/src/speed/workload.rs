//! The speed workloads and their measurement, metered (icrun) and plain.

use super::clock::Stopwatch;
use candid::{CandidType, Principal};
use icrun::{Canister, Env, Limits, Options, Unmetered};
use std::time::Duration;

/// Length of each generated username (anchors.md A: 100-byte usernames).
const USERNAME_BYTES: usize = 100;

/// What `icrun speed` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// `batches` update calls of `insert_users` with `batch_size` new users
    /// each, ids pseudo-random (so inserts land all over the tree).
    InsertUsers {
        /// Number of update calls.
        batches: usize,
        /// Users per call.
        batch_size: usize,
    },
    /// `runs` calls of query `method` with argument `()`.
    Query {
        /// The query's name (e.g. `__canbench__btreemap_v2_insert_u64_u64`).
        method: String,
        /// Number of calls.
        runs: usize,
    },
}

#[derive(CandidType)]
struct User {
    id: u64,
    username: String,
}

/// A message of the workload: query or update, method and argument.
struct Message {
    query: bool,
    method: String,
    arg: Vec<u8>,
}

/// xorshift64*: deterministic ids without a dependency.
fn next_id(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

impl Workload {
    fn messages(&self) -> Result<Vec<Message>, String> {
        match self {
            Workload::InsertUsers {
                batches,
                batch_size,
            } => {
                let mut seed = 0x9e37_79b9_7f4a_7c15;
                (0..*batches)
                    .map(|_| {
                        let users: Vec<User> = (0..*batch_size)
                            .map(|_| {
                                let id = next_id(&mut seed) >> 1;
                                let name = format!("user-{id:020}");
                                let username = format!("{name:x<USERNAME_BYTES$}");
                                User { id, username }
                            })
                            .collect();
                        let arg = candid::encode_one(&users).map_err(|e| e.to_string())?;
                        Ok(Message {
                            query: false,
                            method: "insert_users".into(),
                            arg,
                        })
                    })
                    .collect()
            }
            Workload::Query { method, runs } => Ok((0..*runs)
                .map(|_| Message {
                    query: true,
                    method: method.clone(),
                    arg: b"DIDL\x00\x00".to_vec(),
                })
                .collect()),
        }
    }
}

/// Figures of one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Speed {
    /// Messages run.
    pub messages: usize,
    /// Instructions icrun counted (sum over messages, including the heap
    /// dirty-page charge of updates, docs/metering.md §6).
    pub instructions: u64,
    /// CPU time of the messages on icrun (install and compilation excluded).
    pub metered: Duration,
    /// CPU time of the same messages on the uninstrumented module.
    pub plain: Duration,
}

impl Speed {
    /// Metered instructions per second of CPU time.
    pub fn instructions_per_second(&self) -> f64 {
        self.instructions as f64 / self.metered.as_secs_f64()
    }

    /// How many times longer icrun takes than plain wasmtime.
    pub fn slowdown(&self) -> f64 {
        self.metered.as_secs_f64() / self.plain.as_secs_f64()
    }
}

/// Runs `workload` on `wasm` under icrun and then plain; every message must reply.
pub fn measure(wasm: &[u8], init_arg: &[u8], workload: &Workload) -> Result<Speed, String> {
    let messages = workload.messages()?;
    let options = Options {
        limits: Limits::unlimited(),
        ..Options::default()
    };
    let anonymous = Principal::anonymous();
    let (mut canister, _) =
        Canister::install_with(wasm, init_arg, anonymous, Env::default(), options)
            .map_err(|e| format!("install failed: {e}"))?;
    let mut instructions = 0u64;
    let started = Stopwatch::start();
    for message in &messages {
        let result = if message.query {
            canister.query(&message.method, &message.arg, anonymous)
        } else {
            canister.update(&message.method, &message.arg, anonymous)
        };
        if let Err(reject) = &result.reply {
            return Err(format!("{} was rejected: {reject}", message.method));
        }
        instructions += result.instructions;
    }
    let metered = started.elapsed();

    let mut plain = Unmetered::install(wasm, init_arg)?;
    let started = Stopwatch::start();
    for message in &messages {
        let response = if message.query {
            plain.query(&message.method, &message.arg)?
        } else {
            plain.update(&message.method, &message.arg)?
        };
        if response.is_none() {
            return Err(format!("{} did not reply when run plain", message.method));
        }
    }
    let plain = started.elapsed();
    Ok(Speed {
        messages: messages.len(),
        instructions,
        metered,
        plain,
    })
}
