//! The routes: one per Candid method, parsed from a [`Request`], run on any [`UserStore`] and
//! answered as JSON that mirrors Candid's result variant: `{"Ok": ...}` or
//! `{"Err": <StoreError>, "message": "<its text>"}`.

use crate::edge::auth;
pub use crate::edge::failure::{error_of, status, Failure};
use crate::edge::http::{Request, Response};
pub use crate::edge::http::{MAX_BODY_BYTES, MAX_USER_JSON_BYTES};
pub use crate::edge::route::{Route, ROUTES};
use crate::error::StoreError;
use crate::limits::{self, MAX_BATCH_SIZE, MAX_USERNAME_BYTES};
use crate::store::UserStore;
use crate::user::User;
use serde::Deserialize;
use serde_json::{json, Value};

/// Default page size of `list_users` without `limit`.
pub const DEFAULT_PAGE_SIZE: u32 = 100;

/// One call of the user-table API, parsed and ready to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `POST /insert_user`.
    InsertUser(User),
    /// `POST /insert_users`.
    InsertUsers(Vec<User>),
    /// `GET /get_user?id=N` or `POST /get_user` with `{"id":N}`.
    GetUser(u64),
    /// `GET /get_user_by_name?username=NAME` (NAME percent-encoded, as `encodeURIComponent`
    /// does) or `POST /get_user_by_name` with `{"username":"NAME"}`.
    GetUserByName(String),
    /// `GET /list_users?after=N&limit=M`.
    ListUsers {
        /// The id to start after.
        after: Option<u64>,
        /// The page size.
        limit: u32,
    },
    /// `POST /update_username`: replies the user before.
    UpdateUsername(User),
    /// `POST /delete_user`: replies the deleted user.
    DeleteUser(u64),
    /// `POST /update_users`.
    UpdateUsers(Vec<User>),
    /// `POST /delete_users`.
    DeleteUsers(Vec<u64>),
    /// `GET /count_users`.
    CountUsers,
    /// `GET /config`.
    Config,
    /// `GET /stats`.
    Stats,
    /// `GET /ping`: answered without the lock or the data file, the host's own cost (the
    /// benchmark's floor) and a liveness check.
    Ping,
}

impl Call {
    /// Whether the call writes: it needs the bearer token, and only it is ever committed.
    pub fn writes(&self) -> bool {
        route_of(self).writes
    }
}

/// The route a call came by.
fn route_of(call: &Call) -> Route {
    let index = match call {
        Call::InsertUser(_) => 0,
        Call::InsertUsers(_) => 1,
        Call::GetUser(_) => 2,
        Call::ListUsers { .. } => 3,
        Call::UpdateUsername(_) => 4,
        Call::DeleteUser(_) => 5,
        Call::UpdateUsers(_) => 6,
        Call::DeleteUsers(_) => 7,
        Call::CountUsers => 8,
        Call::Config => 9,
        Call::Stats => 10,
        Call::Ping => 11,
        Call::GetUserByName(_) => 12,
    };
    ROUTES[index]
}

/// What `config` and `stats` report beyond the table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    /// The engine's name (`StorageEngine::NAME`).
    pub engine: &'static str,
    /// Whether the host takes writes (it has a write token).
    pub writes_enabled: bool,
    /// Size of the data, in 64 KiB pages (the header's included).
    pub data_pages: u64,
}

/// Parses a request into a call: its route, method, body size and arguments.
pub fn parse(request: &Request) -> Result<Call, Failure> {
    let path = request.path();
    let Some(route) = ROUTES.iter().find(|route| route.path == path) else {
        return Err(Failure::UnknownRoute(path.to_owned()));
    };
    let method = request.method.to_ascii_uppercase();
    if !route.methods.contains(&method.as_str()) {
        return Err(Failure::MethodNotAllowed {
            method: request.method.clone(),
            route: *route,
        });
    }
    if request.body.len() > MAX_BODY_BYTES {
        return Err(Failure::BodyTooLarge);
    }
    let body = &request.body;
    let query = Query::parse(request.query())?;
    let call = match route.path {
        "/insert_user" => Call::InsertUser(json_body::<UserArg>(body)?.into()),
        "/insert_users" => Call::InsertUsers(users_body(body)?),
        "/get_user" if method == "POST" => Call::GetUser(json_body::<IdArg>(body)?.id),
        "/get_user" => Call::GetUser(query.required("id")?),
        "/get_user_by_name" if method == "POST" => {
            Call::GetUserByName(json_body::<NameArg>(body)?.username)
        }
        "/get_user_by_name" => Call::GetUserByName(query.text("username")?),
        "/list_users" => Call::ListUsers {
            after: query.optional("after")?,
            limit: query.optional("limit")?.unwrap_or(DEFAULT_PAGE_SIZE),
        },
        "/update_username" => Call::UpdateUsername(json_body::<UserArg>(body)?.into()),
        "/delete_user" => Call::DeleteUser(json_body::<IdArg>(body)?.id),
        "/update_users" => Call::UpdateUsers(users_body(body)?),
        "/delete_users" => Call::DeleteUsers(json_body::<Vec<u64>>(body)?),
        "/count_users" => Call::CountUsers,
        "/config" => Call::Config,
        "/ping" => Call::Ping,
        _ => Call::Stats,
    };
    query.check_all_used(route.path)?;
    Ok(call)
}

/// One user in JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserArg {
    id: u64,
    username: String,
}

impl From<UserArg> for User {
    fn from(arg: UserArg) -> Self {
        User::new(arg.id, arg.username)
    }
}

/// An id in JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArg {
    id: u64,
}

/// A username in JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameArg {
    username: String,
}

/// The body as JSON of type `T`; a malformed body, wrong types or invalid UTF-8 are
/// [`StoreError::InvalidInput`].
fn json_body<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Failure> {
    serde_json::from_slice(body)
        .map_err(|error| StoreError::invalid_input(format!("malformed JSON body: {error}")).into())
}

/// A JSON array of users.
fn users_body(body: &[u8]) -> Result<Vec<User>, Failure> {
    Ok(json_body::<Vec<UserArg>>(body)?
        .into_iter()
        .map(User::from)
        .collect())
}

/// A query string's `key=value` pairs, each to be used once.
struct Query<'a> {
    pairs: Vec<(&'a str, &'a str, std::cell::Cell<bool>)>,
}

impl<'a> Query<'a> {
    /// Splits the query; a key given twice is [`StoreError::InvalidInput`].
    fn parse(query: &'a str) -> Result<Self, Failure> {
        let mut pairs: Vec<(&str, &str, std::cell::Cell<bool>)> = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if pairs.iter().any(|(seen, _, _)| *seen == key) {
                return Err(StoreError::invalid_input(format!(
                    "query parameter {key} given twice"
                ))
                .into());
            }
            pairs.push((key, value, std::cell::Cell::new(false)));
        }
        Ok(Self { pairs })
    }

    /// The number `key`, if given.
    fn optional<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, Failure> {
        let Some((_, value, used)) = self.pairs.iter().find(|(name, _, _)| *name == key) else {
            return Ok(None);
        };
        used.set(true);
        value.parse().map(Some).map_err(|_| {
            StoreError::invalid_input(format!(
                "query parameter {key}={value} is not a number of its range"
            ))
            .into()
        })
    }

    /// The number `key`, which must be given.
    fn required<T: std::str::FromStr>(&self, key: &str) -> Result<T, Failure> {
        self.optional(key)?.ok_or_else(|| {
            StoreError::invalid_input(format!("query parameter {key} is required")).into()
        })
    }

    /// The text `key`, which must be given, percent-decoded (`%XX`; a `+` is itself).
    fn text(&self, key: &str) -> Result<String, Failure> {
        let Some((_, value, used)) = self.pairs.iter().find(|(name, _, _)| *name == key) else {
            return Err(
                StoreError::invalid_input(format!("query parameter {key} is required")).into(),
            );
        };
        used.set(true);
        percent_decode(value).ok_or_else(|| {
            StoreError::invalid_input(format!(
                "query parameter {key} is not percent-encoded UTF-8"
            ))
            .into()
        })
    }

    /// Refuses parameters the route does not take.
    fn check_all_used(&self, path: &str) -> Result<(), Failure> {
        match self.pairs.iter().find(|(_, _, used)| !used.get()) {
            Some((key, _, _)) => Err(StoreError::invalid_input(format!(
                "{path} takes no query parameter {key}"
            ))
            .into()),
            None => Ok(()),
        }
    }
}

/// `text` with every `%XX` replaced by the byte it encodes; `None` if an escape is malformed
/// or the bytes are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'%' {
            let hex = after.get(..2)?;
            let hex = std::str::from_utf8(hex).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &after[2..];
        } else {
            bytes.push(byte);
            rest = after;
        }
    }
    String::from_utf8(bytes).ok()
}

/// Runs a call on `store`: the `Ok` value as JSON, or the store's error.
pub fn execute<S: UserStore>(store: &mut S, call: &Call, info: &Info) -> Result<Value, StoreError> {
    Ok(match call {
        Call::InsertUser(user) => {
            store.insert(user.clone())?;
            Value::Null
        }
        Call::InsertUsers(users) => json!(store.insert_batch(users)?),
        Call::GetUser(id) => user_json(&store.get(*id)?),
        Call::GetUserByName(username) => user_json(&store.get_by_name(username)?),
        Call::ListUsers { after, limit } => {
            limits::check_page_size(*limit)?;
            Value::Array(store.page(*after, *limit)?.iter().map(user_json).collect())
        }
        Call::UpdateUsername(user) => user_json(&store.update_username(user.id, &user.username)?),
        Call::DeleteUser(id) => user_json(&store.delete(*id)?),
        Call::UpdateUsers(users) => json!(store.update_batch(users)?),
        Call::DeleteUsers(ids) => json!(store.delete_batch(ids)?),
        Call::CountUsers => json!(store.count()?),
        Call::Config => json!({
            "engine": info.engine,
            "format_version": crate::edge::header::FORMAT_VERSION,
            "writes_enabled": info.writes_enabled,
            "limits": {
                "max_username_bytes": MAX_USERNAME_BYTES,
                "max_batch_size": MAX_BATCH_SIZE,
                "max_page_size": limits::MAX_PAGE_SIZE,
                "max_user_id": limits::MAX_USER_ID,
                "max_body_bytes": MAX_BODY_BYTES,
            },
        }),
        Call::Ping => json!("pong"),
        Call::Stats => json!({
            "engine": info.engine,
            "users": store.count()?,
            "data_pages": info.data_pages,
            "shared_usernames": store.shared_usernames(limits::SHARED_USERNAMES_REPORTED)?,
        }),
    })
}

/// A user as JSON.
fn user_json(user: &User) -> Value {
    json!({ "id": user.id, "username": user.username })
}

/// The response to a call's outcome: 200 with `{"Ok": ...}`, or the failure's [`status`]
/// with `{"Err": ..., "message": ...}`.
pub fn respond(outcome: Result<Value, Failure>) -> Response {
    match outcome {
        Ok(value) => Response::json(200, encode(&json!({ "Ok": value }))),
        Err(failure) => {
            let (error, message) = error_of(&failure);
            let error = serde_json::to_value(&error).unwrap_or(Value::Null);
            let mut response = Response::json(
                status(&failure),
                encode(&json!({ "Err": error, "message": message })),
            );
            if let Failure::MethodNotAllowed { route, .. } = failure {
                response.set_header("allow", route.methods.join(", "));
            }
            response
        }
    }
}

/// JSON text of a value.
fn encode(value: &Value) -> Vec<u8> {
    // A `Value` always serializes.
    serde_json::to_vec(value).unwrap_or_default()
}

/// Parses, authorizes and runs one request on `store`, with `token` the host's write token
/// (`None`: writes disabled). The whole API on any store, without files or locks; the
/// session ([`crate::edge::session`]) does the same around a data file.
pub fn handle<S: UserStore>(
    store: &mut S,
    request: &Request,
    token: Option<&str>,
    info: &Info,
) -> Response {
    let outcome = parse(request).and_then(|call| {
        if call.writes() {
            auth::authorize(token, request)?;
        }
        execute(store, &call, info).map_err(Failure::from)
    });
    respond(outcome)
}
