//! The table under a sequence of writes and reads, reply by reply against userstore's model
//! (`userstore::model::ModelStore`, which the tests hold every engine to), then an upgrade and
//! every row the sequence touched read back. The size sweep runs it on every engine's table
//! at every size, so that the largest tables are held to the rules the tests hold the small
//! ones to: an id or a name taken is refused, a batch is all or nothing, a rename frees the
//! old name, and all of it survives an upgrade.
//!
//! The model holds only the rows the sequence may touch (the *universe*: some preloaded
//! users, free ids, names no preloaded user has); every other preloaded row is known from
//! [`preloaded_user`], so a table of any size is checked without a model of its size.

use crate::reply::{decoded, owner};
use crate::run::no_argument;
use crate::workloads::encode as encoded;
use icrun::Canister;
use std::collections::{BTreeMap, BTreeSet};
use userstore::model::ModelStore;
use userstore::{StoreError, User, UserStore};
use userstore_benches::tables::{preloaded_user, scrambled, ID_STEP, USERNAME_BYTES};

/// Preloaded users the sequence may touch (the first and the last among them).
const PRELOADED: u64 = 24;

/// Free ids (between two preloaded ids, or past the last) and fresh names in the universe.
const FRESH: u64 = 12;

/// Calls in the sequence, before the upgrade.
const CALLS: u64 = 200;

/// Users in a page the sequence lists.
const PAGE: u32 = 8;

/// Runs the sequence on `canister`, which holds the preloaded table of `rows` users, then
/// upgrades it to `wasm` and reads back every id and name of the universe and the count.
/// `what` names the table in the error. It fails too if a write method was never both done and
/// refused ([`exercised`]). The table is changed: run it last on a copy.
pub fn check_against_model(
    canister: &mut Canister,
    wasm: &[u8],
    rows: u64,
    what: &str,
) -> Result<(), String> {
    let mut universe = Universe::new(rows);
    let mut random = Random(0);
    let mut tally = Tally::new();
    for call in 0..CALLS {
        let write = universe
            .call(canister, &mut random)
            .map_err(|error| format!("{what}, model check, call {call}: {error}"))?;
        if let Some((method, done)) = write {
            tally.entry(method).or_default()[usize::from(!done)] += 1;
        }
    }
    canister
        .upgrade(wasm, &no_argument(), owner())
        .map_err(|error| format!("{what}, model check: upgrading: {error}"))?;
    universe
        .read_back(canister)
        .map_err(|error| format!("{what}, model check, after the upgrade: {error}"))?;
    exercised(&tally).map_err(|error| format!("{what}, model check: {error}"))
}

/// What a call's ids and names are picked for.
#[derive(Clone, Copy)]
enum Aim {
    /// Ids the table does not hold, names no user holds: an insert that can succeed.
    Inserting,
    /// Ids the table holds, names no user holds: a rename or a delete that can succeed.
    Changing,
    /// Any id and name of the universe: mostly refusals (taken, missing, duplicated).
    Any,
}

/// A write the sequence made: its method, and whether it succeeded (or was refused).
type Write = (&'static str, bool);

/// How many writes of each method succeeded (`[0]`) and were refused (`[1]`).
type Tally = BTreeMap<&'static str, [u64; 2]>;

/// The rows the sequence may touch, and the model of them.
struct Universe {
    rows: u64,
    /// The preloaded users in the model (whatever the sequence has done to them since).
    preloaded: BTreeSet<u64>,
    ids: Vec<u64>,
    names: Vec<String>,
    model: ModelStore,
}

impl Universe {
    fn new(rows: u64) -> Self {
        let preloaded: BTreeSet<u64> = (0..PRELOADED)
            .map(|index| index * rows.saturating_sub(1) / (PRELOADED - 1) * ID_STEP)
            .collect();
        let users: Vec<User> = preloaded.iter().map(|id| preloaded_user(*id)).collect();
        // Half the free ids between two preloaded ones (ending in 5), half past the last.
        let free = (0..FRESH).map(|index| {
            if index % 2 == 0 {
                (index * rows / FRESH) * ID_STEP + ID_STEP / 2
            } else {
                (rows + index) * ID_STEP
            }
        });
        let ids = preloaded.iter().copied().chain(free).collect();
        let names = users
            .iter()
            .map(|user| user.username.clone())
            .chain((0..FRESH).map(fresh_name))
            .collect();
        Self {
            rows,
            preloaded,
            ids,
            names,
            model: ModelStore::with_rows(users),
        }
    }

    /// An id of the universe that `aim` may succeed on (any, if none is).
    fn id(&self, random: &mut Random, aim: Aim) -> u64 {
        let held = |id: &&u64| self.model.get(**id).is_ok();
        let pool: Vec<u64> = match aim {
            Aim::Any => self.ids.clone(),
            Aim::Inserting => self.ids.iter().filter(|id| !held(id)).copied().collect(),
            Aim::Changing => self.ids.iter().filter(held).copied().collect(),
        };
        let pool = if pool.is_empty() { &self.ids } else { &pool };
        pool[random.below(pool.len())]
    }

    /// A name of the universe that `aim` may succeed with: one no user holds (any, if none
    /// is or if `aim` is [`Aim::Any`]).
    fn name(&self, random: &mut Random, aim: Aim) -> String {
        let pool: Vec<&String> = match aim {
            Aim::Any => Vec::new(),
            Aim::Inserting | Aim::Changing => self
                .names
                .iter()
                .filter(|name| self.model.get_by_name(name).is_err())
                .collect(),
        };
        if pool.is_empty() {
            self.names[random.below(self.names.len())].clone()
        } else {
            pool[random.below(pool.len())].clone()
        }
    }

    fn user(&self, random: &mut Random, aim: Aim) -> User {
        User::new(self.id(random, aim), self.name(random, aim))
    }

    fn users(&self, random: &mut Random, aim: Aim) -> Vec<User> {
        let count = 2 + random.below(3);
        (0..count).map(|_| self.user(random, aim)).collect()
    }

    /// One call chosen by `random`, its reply compared with the model's; a write and its
    /// outcome.
    fn call(
        &mut self,
        canister: &mut Canister,
        random: &mut Random,
    ) -> Result<Option<Write>, String> {
        // Half the writes aim at rows they can succeed on, half at any row of the universe.
        let aim = |random: &mut Random, fitting| {
            if random.below(2) == 0 {
                fitting
            } else {
                Aim::Any
            }
        };
        match random.below(10) {
            0 | 1 => {
                let aim = aim(random, Aim::Inserting);
                let user = self.user(random, aim);
                let want = self.model.insert(user.clone());
                write(canister, "insert_user", encoded((user,))?, want)
            }
            2 => {
                let aim = aim(random, Aim::Inserting);
                let users = self.users(random, aim);
                let want = self.model.insert_batch(&users);
                write(canister, "insert_users", encoded((users,))?, want)
            }
            3 | 4 => {
                let aim = aim(random, Aim::Changing);
                let (id, name) = (self.id(random, aim), self.name(random, aim));
                let want = self.model.update_username(id, &name);
                write(canister, "update_username", encoded((id, name))?, want)
            }
            5 => {
                let aim = aim(random, Aim::Changing);
                let users = self.users(random, aim);
                let want = self.model.update_batch(&users);
                write(canister, "update_users", encoded((users,))?, want)
            }
            6 => {
                // Half an id the table holds, half one it does not (most ids are held).
                let id = match aim(random, Aim::Changing) {
                    Aim::Any => self.id(random, Aim::Inserting),
                    aim => self.id(random, aim),
                };
                let want = self.model.delete(id);
                write(canister, "delete_user", encoded((id,))?, want)
            }
            7 => {
                let aim = aim(random, Aim::Changing);
                let count = 2 + random.below(2);
                let ids: Vec<u64> = (0..count).map(|_| self.id(random, aim)).collect();
                let want = self.model.delete_batch(&ids);
                write(canister, "delete_users", encoded((ids,))?, want)
            }
            8 => self.read(canister, random).map(|()| None),
            _ => {
                let after = (random.below(4) > 0).then(|| self.id(random, Aim::Any));
                self.list(canister, after).map(|()| None)
            }
        }
    }

    /// A read: a user by id, a user by name, or the count.
    fn read(&self, canister: &mut Canister, random: &mut Random) -> Result<(), String> {
        let found = match random.below(3) {
            0 => {
                let id = self.id(random, Aim::Any);
                same(
                    canister.query("get_user", &encoded((id,))?, owner()),
                    self.model.get(id),
                )
            }
            1 => {
                let name = self.name(random, Aim::Any);
                let want = self.model.get_by_name(&name);
                let arg = encoded((name,))?;
                same(canister.query("get_user_by_name", &arg, owner()), want)
            }
            _ => same(
                canister.query("count_users", &encoded(())?, owner()),
                self.count(),
            ),
        };
        found.map(drop)
    }

    /// The rows outside the universe are the preloaded ones the model does not hold.
    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.rows - self.preloaded.len() as u64 + self.model.count()?)
    }

    /// A page after `after`: the model's rows and the preloaded rows outside the universe,
    /// merged in id order.
    fn list(&self, canister: &mut Canister, after: Option<u64>) -> Result<(), String> {
        let mut want = self
            .model
            .page(after, PAGE)
            .map_err(|error| format!("the model's page: {error}"))?;
        let mut position = after.map_or(0, |after| after / ID_STEP + 1);
        let mut outside = 0;
        while outside < PAGE && position < self.rows {
            let id = position * ID_STEP;
            if !self.preloaded.contains(&id) {
                want.push(preloaded_user(id));
                outside += 1;
            }
            position += 1;
        }
        want.sort_by_key(|user| user.id);
        want.truncate(PAGE as usize);
        let arg = encoded((after, PAGE))?;
        same(canister.query("list_users", &arg, owner()), Ok(want)).map(drop)
    }

    /// Every id and name of the universe, and the count, read back.
    fn read_back(&self, canister: &mut Canister) -> Result<(), String> {
        for id in &self.ids {
            same(
                canister.query("get_user", &encoded((*id,))?, owner()),
                self.model.get(*id),
            )?;
        }
        for name in &self.names {
            let want = self.model.get_by_name(name);
            let arg = encoded((name.clone(),))?;
            same(canister.query("get_user_by_name", &arg, owner()), want)?;
        }
        same(
            canister.query("count_users", &encoded(())?, owner()),
            self.count(),
        )?;
        self.list(canister, None)
    }
}

/// Fails unless every write method both succeeded and was refused at least once in `tally`:
/// a sequence that never reached one of the outcomes checked less than it claims.
fn exercised(tally: &Tally) -> Result<(), String> {
    for method in WRITES {
        match tally.get(method) {
            Some([done, refused]) if *done > 0 && *refused > 0 => {}
            other => {
                return Err(format!(
                    "the sequence's {method} calls (done, refused): {other:?}"
                ))
            }
        }
    }
    Ok(())
}

/// Every writing method the sequence calls.
const WRITES: [&str; 6] = [
    "insert_user",
    "insert_users",
    "update_username",
    "update_users",
    "delete_user",
    "delete_users",
];

/// A username no preloaded user has (its prefix differs), of the preloaded names' length.
fn fresh_name(index: u64) -> String {
    format!("model-{:0>width$}", index, width = USERNAME_BYTES - 6)
}

/// `method` called with `arg` as an update, its reply compared with the model's `want`; the
/// write and its outcome.
fn write<T>(
    canister: &mut Canister,
    method: &'static str,
    arg: Vec<u8>,
    want: Result<T, StoreError>,
) -> Result<Option<Write>, String>
where
    T: candid::CandidType + for<'de> serde::Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let done = same(canister.update(method, &arg, owner()), want)?;
    Ok(Some((method, done)))
}

/// Fails unless the reply decodes to `want`; whether the call succeeded.
fn same<T>(reply: icrun::CallResult, want: Result<T, StoreError>) -> Result<bool, String>
where
    T: candid::CandidType + for<'de> serde::Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let got = decoded::<T>(&reply, "the call")?;
    if got == want {
        Ok(got.is_ok())
    } else {
        Err(format!("the canister replied {got:?}, the model {want:?}"))
    }
}

/// A deterministic sequence ([`scrambled`] of a counter), the same at every size, so that a
/// failing sequence is reproduced by running the sweep again and the test's table (whose
/// universe has the same shape as the largest's) makes the same choices.
struct Random(u64);

impl Random {
    /// A number in `0..bound`.
    fn below(&mut self, bound: usize) -> usize {
        self.0 = self.0.wrapping_add(1);
        (scrambled(self.0) % bound as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::checked;
    use crate::test_canister::filled_page_tree;

    #[test]
    fn a_whole_table_passes_and_a_changed_one_fails() {
        let rows = 300;
        let (mut canister, wasm) = filled_page_tree(rows);
        // Passing includes every write method both done and refused ([`exercised`]).
        check_against_model(&mut canister, &wasm, rows, "whole")
            .expect("the table keeps the rules");
        assert!(exercised(&Tally::new()).is_err());
        // The canister now holds the sequence's changes, which a fresh universe does not know:
        // its first call or its read-back must differ.
        let (mut changed, wasm) = filled_page_tree(rows);
        let first = Universe::new(rows).ids[0];
        let deleted = changed.update("delete_user", &encoded((first,)).unwrap(), owner());
        checked::<User>(&deleted, "delete_user").expect("deletes");
        assert!(check_against_model(&mut changed, &wasm, rows, "changed").is_err());
    }

    #[test]
    fn the_universe_holds_free_ids_and_names_no_preloaded_user_has() {
        for rows in [1, 300, 10_000_000] {
            let universe = Universe::new(rows);
            for id in &universe.ids {
                let preloaded = id % ID_STEP == 0 && id / ID_STEP < rows;
                assert_eq!(preloaded, universe.preloaded.contains(id), "{rows}: {id}");
            }
            assert!(universe.preloaded.contains(&0));
            assert!(universe.preloaded.contains(&((rows - 1) * ID_STEP)));
            assert_eq!(universe.count(), Ok(rows));
            let names: BTreeSet<&String> = universe.names.iter().collect();
            assert_eq!(names.len(), universe.names.len(), "{rows}: names repeat");
            assert!(universe.names.iter().all(|n| n.len() == USERNAME_BYTES));
        }
    }
}
