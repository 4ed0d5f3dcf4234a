//! The requests of each workload, the canister benchmark's workloads sent over HTTP: the
//! same table (ids 0, 10, 20, ... with 100-byte usernames) and the same kinds of call.
//!
//! Ids never collide between requests: each workload draws from its own free digit (ids
//! ending in 5, 3, 7 are inserted "between", ids ending in 9 are never present) and from
//! its own slice of a shuffled list of positions, fresh for every run and phase. The reads and
//! the renames share the kept half of the table: the `index`th get by name and the `index`th
//! rename are of the same user, so [`Workload::ALL`] runs the gets by name before the renames
//! (a name asked for is still the fill's).

use serde_json::{json, Value};
use userstore_benches::tables::{preloaded_user, ID_STEP};

/// Users in a batch request, as in the canister benchmark.
pub const BATCH_ROWS: u64 = 1_000;

/// A workload of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `insert_user` of an id between two existing ones.
    InsertOne,
    /// `get_user` of an existing id.
    Get,
    /// `get_user` of an id that is not in the table (404).
    GetMissing,
    /// `get_user_by_name` of an existing user's name (the unique-name index).
    GetByName,
    /// `update_username` of an existing id.
    Update,
    /// `delete_user` of an existing id.
    Delete,
    /// `list_users` of 100 from an existing id.
    List100,
    /// `count_users`.
    Count,
    /// `insert_users` of 1,000 consecutive ids between existing ones.
    BatchBetween,
    /// `insert_users` of 1,000 ids above every id.
    BatchAppended,
    /// `insert_users` of 1,000 ids scattered over the table.
    BatchScattered,
}

impl Workload {
    /// Every workload, in the order they run (deletes last among the one-row calls, so the
    /// ids the others read are still there; gets by name before renames, so the names they
    /// ask for are still there).
    pub const ALL: [Workload; 11] = [
        Self::InsertOne,
        Self::Get,
        Self::GetMissing,
        Self::GetByName,
        Self::Update,
        Self::List100,
        Self::Count,
        Self::Delete,
        Self::BatchBetween,
        Self::BatchAppended,
        Self::BatchScattered,
    ];

    /// Its name in the results.
    pub fn name(self) -> &'static str {
        match self {
            Self::InsertOne => "insert_one",
            Self::Get => "get",
            Self::GetMissing => "get_missing",
            Self::GetByName => "get_by_name",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::List100 => "list_100",
            Self::Count => "count",
            Self::BatchBetween => "batch_between_1000",
            Self::BatchAppended => "batch_appended_1000",
            Self::BatchScattered => "batch_scattered_1000",
        }
    }

    /// Whether a request of it carries 1,000 rows.
    pub fn is_batch(self) -> bool {
        matches!(
            self,
            Self::BatchBetween | Self::BatchAppended | Self::BatchScattered
        )
    }

    /// The status every request of it must get.
    pub fn expected_status(self) -> u16 {
        match self {
            Self::GetMissing => 404,
            _ => 200,
        }
    }
}

/// One request: method, path and JSON body.
#[derive(Clone, Debug)]
pub struct Request {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// Path and query.
    pub path: String,
    /// The JSON text of a `POST`'s body, encoded when the request is drawn, so that a
    /// measured request times the request, not its encoding.
    pub body: Option<Vec<u8>>,
}

impl Request {
    fn get(path: String) -> Self {
        Self {
            method: "GET",
            path,
            body: None,
        }
    }

    fn post(path: &str, body: Value) -> Self {
        Self {
            method: "POST",
            path: path.to_string(),
            body: Some(body.to_string().into_bytes()),
        }
    }
}

/// Draws the requests of a table of `rows` rows.
pub struct Plan {
    rows: u64,
    /// Positions, shuffled: the first half is read and updated, the second half deleted.
    shuffled: Vec<u64>,
    /// Blocks of [`BATCH_ROWS`] consecutive positions, shuffled.
    blocks: Vec<u64>,
}

impl Plan {
    /// The plan for a table of `rows` rows (at least 2 × [`BATCH_ROWS`]).
    pub fn new(rows: u64, seed: u64) -> Self {
        let mut random = Random(seed | 1);
        let mut shuffled: Vec<u64> = (0..rows).collect();
        random.shuffle(&mut shuffled);
        let mut blocks: Vec<u64> = (0..rows / BATCH_ROWS).collect();
        random.shuffle(&mut blocks);
        Self {
            rows,
            shuffled,
            blocks,
        }
    }

    /// The table's rows.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The `index`th request of `workload` (indexes never repeat within a table's life:
    /// the caller numbers requests across runs and phases).
    pub fn request(&self, workload: Workload, index: u64) -> Request {
        let half = self.rows / 2;
        let kept = |i: u64| self.shuffled[(i % half) as usize] * ID_STEP;
        let fresh = |i: u64| self.shuffled[(i % self.rows) as usize] * ID_STEP;
        match workload {
            Workload::InsertOne => {
                let user = preloaded_user(fresh(index) + 5);
                Request::post(
                    "/insert_user",
                    json!({"id": user.id, "username": user.username}),
                )
            }
            Workload::Get => Request::get(format!("/get_user?id={}", kept(index))),
            Workload::GetMissing => Request::get(format!("/get_user?id={}", fresh(index) + 9)),
            // The fill's names are URL-safe (letters, digits and '-'), so the query needs no
            // encoding.
            Workload::GetByName => Request::get(format!(
                "/get_user_by_name?username={}",
                preloaded_user(kept(index)).username
            )),
            Workload::Update => Request::post(
                "/update_username",
                json!({"id": kept(index), "username": format!("renamed-{index:0>92}")}),
            ),
            Workload::Delete => {
                let id = self.shuffled[(half + index % (self.rows - half)) as usize] * ID_STEP;
                Request::post("/delete_user", json!({"id": id}))
            }
            Workload::List100 => {
                Request::get(format!("/list_users?after={}&limit=100", kept(index)))
            }
            Workload::Count => Request::get("/count_users".to_string()),
            Workload::BatchBetween => {
                let block = self.blocks[(index % self.blocks.len() as u64) as usize];
                let ids = (0..BATCH_ROWS).map(|k| (block * BATCH_ROWS + k) * ID_STEP + 3);
                Request::post("/insert_users", users(ids))
            }
            Workload::BatchAppended => {
                let first = (self.rows + index * BATCH_ROWS) * ID_STEP;
                let ids = (0..BATCH_ROWS).map(|k| first + k * ID_STEP);
                Request::post("/insert_users", users(ids))
            }
            Workload::BatchScattered => {
                let ids = (0..BATCH_ROWS).map(|k| fresh(index * BATCH_ROWS + k) + 7);
                Request::post("/insert_users", users(ids))
            }
        }
    }

    /// The fill: every position in a random order (the aged table), `batch` users a request.
    pub fn fill_batches(&self, batch: usize) -> impl Iterator<Item = Request> + '_ {
        self.shuffled.chunks(batch).map(|positions| {
            Request::post(
                "/insert_users",
                users(positions.iter().map(|position| position * ID_STEP)),
            )
        })
    }
}

fn users(ids: impl Iterator<Item = u64>) -> Value {
    Value::Array(
        ids.map(|id| {
            let user = preloaded_user(id);
            json!({"id": user.id, "username": user.username})
        })
        .collect(),
    )
}

/// A small deterministic generator (xorshift64*): the same seed draws the same table.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn shuffle(&mut self, values: &mut [u64]) {
        for i in (1..values.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            values.swap(i, j);
        }
    }
}
