//! Power cuts in every journal mode × synchronous level: SQLite's files on a simulated disk
//! (`sim_vfs`) that drops every write not yet synced, some torn, at a crash point chosen
//! among the disk's operations (every k-th of a run), as SQLite's own crash tests do
//! (<https://sqlite.org/atomiccommit.html>, "Crash testing"). After each cut the file is
//! reopened (a hot journal rolled back, a WAL recovered) and must pass `PRAGMA
//! integrity_check` and hold the last acknowledged table or the one in flight; anything else
//! is a divergence: a lost commit (an older acknowledged table) or a corruption.
//!
//! `SQLITE_CRASH_POINTS` sets the crash points per configuration (default 40).

use crate::config::{JournalMode, SqliteFileConfig, Synchronous};
use crate::sim_vfs;
use crate::SqliteFileStore;
use std::collections::BTreeMap;
use std::sync::Arc;
use userstore::file_memory::sim::SimDisk;
use userstore::{StoreError, User, UserStore};
use userstore_peer_common::IoCounters;

/// The database's name on the simulated disk.
const PATH: &str = "/sim/users.db";

/// The user table.
type Table = BTreeMap<u64, String>;

/// One write call, one transaction.
enum Write {
    Insert(Vec<User>),
    Update(Vec<User>),
    Delete(Vec<u64>),
}

/// A username of 100 bytes: about 35 users a 4 KiB page, so a batch spans pages.
fn name(id: u64, round: u64) -> String {
    format!("{id:>6}-{round:>3}-{}", "x".repeat(89))
}

/// The workload: batches that grow the table over several pages, rewrite rows across it,
/// and delete some (page merges).
fn workload() -> Vec<Write> {
    let users = |ids: &mut dyn Iterator<Item = u64>, round| {
        ids.map(|id| User::new(id, name(id, round))).collect()
    };
    vec![
        Write::Insert(users(&mut (0..60), 1)),
        Write::Insert(users(&mut (60..150), 2)),
        Write::Update(users(&mut (0..150).step_by(7), 3)),
        Write::Delete((10..70).step_by(2).collect()),
        Write::Insert(users(&mut (150..200), 5)),
        Write::Update(users(
            &mut (1..200)
                .step_by(5)
                .filter(|id| !(10..70).contains(id) || id % 2 == 1),
            6,
        )),
        Write::Delete((100..140).collect()),
        Write::Insert(users(&mut (1000..1040), 8)),
    ]
}

fn apply(table: &Table, write: &Write) -> Table {
    let mut table = table.clone();
    match write {
        Write::Insert(users) | Write::Update(users) => {
            for user in users {
                table.insert(user.id, user.username.clone());
            }
        }
        Write::Delete(ids) => {
            for id in ids {
                table.remove(id);
            }
        }
    }
    table
}

fn run_write(store: &mut SqliteFileStore, write: &Write) -> Result<u64, StoreError> {
    match write {
        Write::Insert(users) => store.insert_batch(users),
        Write::Update(users) => store.update_batch(users),
        Write::Delete(ids) => store.delete_batch(ids),
    }
}

fn open(config: SqliteFileConfig) -> Result<SqliteFileStore, StoreError> {
    SqliteFileStore::open_on(PATH, config, sim_vfs::NAME, Arc::new(IoCounters::default()))
}

/// What a crash point ended in.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The workload finished before the crash point: the disk's operations in a run.
    NoCrash { operations: u64 },
    /// The reopened table is the last acknowledged one or the one in flight.
    Consistent,
    /// The reopened table is an older acknowledged one: commits lost.
    Lost { commits: usize },
    /// The file does not open, fails its integrity check, or holds a table no call made.
    Corrupt(String),
}

/// Runs the workload on a fresh disk, crashing at its `crash_at`th operation, then cuts the
/// power with `seed`, reopens and checks; without a crash point, only counts the operations.
fn crash_run(config: SqliteFileConfig, crash_at: Option<u64>, seed: u64) -> Outcome {
    let disk = SimDisk::new();
    sim_vfs::install(disk.clone());
    if let Some(operation) = crash_at {
        disk.fail_after(operation);
    }
    // The tables acknowledged so far (the first: the schema's commit at the open), and the
    // one in flight at the crash.
    let mut acknowledged: Vec<Table> = Vec::new();
    let mut in_flight = Some(Table::new());
    if let Ok(mut store) = open(config) {
        acknowledged.push(Table::new());
        in_flight = None;
        for write in workload() {
            let last = acknowledged.last().expect("the open's");
            let next = apply(last, &write);
            match run_write(&mut store, &write) {
                Ok(_) => acknowledged.push(next),
                Err(_) => {
                    in_flight = Some(next);
                    break;
                }
            }
        }
        // Closed while the process is dead (at a crash): it writes nothing more. A crash point
        // among the close's operations cuts the power after the last acknowledged call.
        drop(store);
    }
    if crash_at.is_none() {
        return Outcome::NoCrash {
            operations: disk.operations(),
        };
    }
    disk.power_cut(seed);
    let store = match open(config) {
        Ok(store) => store,
        Err(error) => return Outcome::Corrupt(format!("reopening: {error}")),
    };
    let check: Result<String, _> =
        store
            .connection
            .query_row("PRAGMA integrity_check", [], |row| row.get(0));
    match check {
        Ok(answer) if answer == "ok" => {}
        other => return Outcome::Corrupt(format!("integrity_check: {other:?}")),
    }
    let table: Table = match store.page(None, 10_000) {
        Ok(users) => users
            .into_iter()
            .map(|user| (user.id, user.username))
            .collect(),
        Err(error) => return Outcome::Corrupt(format!("reading: {error}")),
    };
    if Some(&table) == in_flight.as_ref() || Some(&table) == acknowledged.last() {
        return Outcome::Consistent;
    }
    match acknowledged.iter().rposition(|state| *state == table) {
        Some(index) => Outcome::Lost {
            commits: acknowledged.len() - 1 - index,
        },
        None => Outcome::Corrupt(format!(
            "a table of {} rows that no call made ({} acknowledged calls)",
            table.len(),
            acknowledged.len()
        )),
    }
}

/// The tally of one configuration.
#[derive(Debug, Default)]
struct Tally {
    operations: u64,
    points: u64,
    lost: u64,
    corrupt: u64,
    first_corruption: Option<String>,
}

impl Tally {
    fn divergences(&self) -> u64 {
        self.lost + self.corrupt
    }
}

fn crash_points() -> u64 {
    std::env::var("SQLITE_CRASH_POINTS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(40)
        .max(1)
}

fn tally(config: SqliteFileConfig, points: u64) -> Tally {
    let Outcome::NoCrash { operations } = crash_run(config, None, 0) else {
        panic!("a run without a crash point crashed");
    };
    let step = (operations / points).max(1);
    let mut tally = Tally {
        operations,
        ..Tally::default()
    };
    for crash_at in (0..operations).step_by(step as usize) {
        let seed = crash_at.wrapping_mul(0x9E37_79B9) ^ config.synchronous.level() as u64;
        tally.points += 1;
        match crash_run(config, Some(crash_at), seed) {
            Outcome::NoCrash { .. } => unreachable!("a crash point is given"),
            Outcome::Consistent => {}
            Outcome::Lost { .. } => tally.lost += 1,
            Outcome::Corrupt(reason) => {
                tally.corrupt += 1;
                tally
                    .first_corruption
                    .get_or_insert(format!("at {crash_at}: {reason}"));
            }
        }
    }
    tally
}

#[test]
fn power_cuts_in_every_journal_mode_and_sync_level() {
    use JournalMode::*;
    let points = crash_points();
    let mut failures = Vec::new();
    println!(
        "{:<9} {:<7} {:>10} {:>7} {:>11} {:>5} {:>8}",
        "journal", "sync", "operations", "points", "divergences", "lost", "corrupt"
    );
    for journal_mode in [Delete, Truncate, Persist, Wal, Memory, Off] {
        for synchronous in [Synchronous::Full, Synchronous::Normal, Synchronous::Off] {
            let config = SqliteFileConfig {
                journal_mode,
                synchronous,
            };
            let tally = tally(config, points);
            println!(
                "{:<9} {:<7} {:>10} {:>7} {:>11} {:>5} {:>8}  {}",
                journal_mode.pragma(),
                synchronous.pragma(),
                tally.operations,
                tally.points,
                tally.divergences(),
                tally.lost,
                tally.corrupt,
                tally.first_corruption.as_deref().unwrap_or("")
            );
            let durable =
                synchronous == Synchronous::Full && journal_mode != Memory && journal_mode != Off;
            let can_lose =
                synchronous == Synchronous::Off || journal_mode == Memory || journal_mode == Off;
            if durable && tally.divergences() > 0 {
                failures.push(format!("{config:?} promises durability: {tally:?}"));
            }
            // WAL with NORMAL may lose the last commits at a power cut, never corrupt
            // (https://sqlite.org/pragma.html#pragma_synchronous).
            if journal_mode == Wal && synchronous == Synchronous::Normal && tally.corrupt > 0 {
                failures.push(format!("{config:?} must not corrupt: {tally:?}"));
            }
            if can_lose && tally.divergences() == 0 {
                failures.push(format!(
                    "{config:?} can lose data, yet lost none: {tally:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
