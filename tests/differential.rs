//! A randomized differential test: every configuration of every store canister in the
//! registry gets the same long sequence of calls, valid and invalid, from a writer and from
//! a stranger, and must give byte-identical Candid replies to every one of them, then hold
//! identical tables. The sequence comes from a fixed seed, so a failure reproduces.

use userstore::User;
use userstore_e2e::{encode, every_store, owner, stranger, Rejected, StoreCanister};

/// The seed of the call sequence; change it to explore another one.
const SEED: u64 = 0x5eed_2026_1122;
/// Calls in the sequence.
const CALLS: usize = 3_000;
/// Ids are drawn from a small range so that inserts clash, updates and deletes hit.
const ID_RANGE: u64 = 400;

/// SplitMix64: a small deterministic generator, enough to draw a call sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn id(&mut self) -> u64 {
        // Now and then an id above the largest one allowed (2^63 - 1).
        if self.chance(2) {
            return u64::MAX - self.below(10);
        }
        self.below(ID_RANGE)
    }

    fn username(&mut self) -> String {
        match self.below(20) {
            0 => String::new(),   // invalid: empty
            1 => "x".repeat(129), // invalid: over 128 bytes
            2 => "é".repeat(64),  // exactly 128 bytes of UTF-8
            _ => format!("user-{}", self.below(1_000_000)),
        }
    }

    fn user(&mut self) -> User {
        User::new(self.id(), self.username())
    }

    fn users(&mut self) -> Vec<User> {
        let len = self.below(30);
        (0..len).map(|_| self.user()).collect()
    }

    fn ids(&mut self) -> Vec<u64> {
        let len = self.below(30);
        (0..len).map(|_| self.id()).collect()
    }
}

/// One call of the sequence: update or query, caller, method, Candid argument.
struct Call {
    update: bool,
    caller: candid::Principal,
    method: &'static str,
    arg: Vec<u8>,
}

fn draw(rng: &mut Rng) -> Call {
    let caller = if rng.chance(5) { stranger() } else { owner() };
    let update = |method, arg| Call {
        update: true,
        caller,
        method,
        arg,
    };
    let query = |method, arg| Call {
        update: false,
        caller: candid::Principal::anonymous(),
        method,
        arg,
    };
    match rng.below(11) {
        0 | 1 => update("insert_user", encode((rng.user(),))),
        2 | 3 => update("insert_users", encode((rng.users(),))),
        4 => query("get_user", encode((rng.id(),))),
        5 => {
            let after = if rng.chance(20) { None } else { Some(rng.id()) };
            // Now and then a page size of 0 or over the limit (10,000).
            let limit = match rng.below(10) {
                0 => 0u32,
                1 => 10_001,
                _ => rng.below(60) as u32,
            };
            query("list_users", encode((after, limit)))
        }
        6 => update("update_username", encode((rng.id(), rng.username()))),
        7 => update("delete_user", encode((rng.id(),))),
        8 => update("update_users", encode((rng.users(),))),
        9 => update("delete_users", encode((rng.ids(),))),
        _ => query("count_users", encode(())),
    }
}

/// The call's reply from `store`; a reject's message names the canister, so its id is
/// replaced by `<canister>` for the comparison between stores.
fn send(store: &StoreCanister, call: &Call) -> Result<Vec<u8>, Rejected> {
    let reply = if call.update {
        store.update_raw(call.caller, call.method, call.arg.clone())
    } else {
        store.query_raw(call.method, call.arg.clone())
    };
    reply.map_err(|reject| Rejected {
        message: reject.message.replace(&store.id.to_text(), "<canister>"),
        ..reject
    })
}

/// Whether a Candid reply is a `Result`'s `Err` variant.
fn is_error_value(reply: &[u8]) -> bool {
    let decoded: Result<candid::Reserved, userstore::StoreError> =
        candid::decode_one(reply).expect("every method of the sequence returns a Result");
    decoded.is_err()
}

/// Every row, read by paging to the end.
fn all_rows(store: &StoreCanister) -> Vec<User> {
    let mut rows = Vec::new();
    let mut after = None;
    loop {
        let (page,): (Result<Vec<User>, userstore::StoreError>,) = store
            .query("list_users", (after, 97u32))
            .expect("list_users");
        let page = page.expect("page");
        let Some(last) = page.last() else {
            return rows;
        };
        after = Some(last.id);
        rows.extend(page);
    }
}

#[test]
fn every_store_canister_replies_identically_to_a_random_call_sequence() {
    // The first configuration of the registry is the reference; every other one, of every
    // engine, must answer byte for byte as it does.
    let mut stores = every_store();
    let (reference_name, reference) = stores.remove(0);
    let others = stores;
    let mut rng = Rng(SEED);
    let mut error_values = 0;
    for index in 0..CALLS {
        let call = draw(&mut rng);
        let expected = send(&reference, &call);
        // Every call is valid Candid for its method: each gets a reply, but a stranger's
        // write, which inspect_message refuses before it runs.
        match &expected {
            Ok(reply) if is_error_value(reply) => error_values += 1,
            Ok(_) => {}
            Err(_) if call.caller == stranger() && call.update => {}
            Err(reject) => panic!("call {index} ({}) rejected: {reject}", call.method),
        }
        for (name, store) in &others {
            let actual = send(store, &call);
            assert_eq!(
                actual, expected,
                "call {index} ({} by {}) differs between {reference_name} and {name}",
                call.method, call.caller
            );
        }
    }
    let rows = all_rows(&reference);
    for (name, store) in &others {
        assert_eq!(all_rows(store), rows, "final table of {name}");
    }
    // The sequence must exercise both successes and error values, and leave a table worth
    // comparing.
    assert!(
        (CALLS / 10..CALLS * 9 / 10).contains(&error_values),
        "{error_values} error values in {CALLS} calls"
    );
    assert!(rows.len() > 50, "{} rows at the end", rows.len());
}
