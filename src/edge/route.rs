//! The routes of the edge API: one per Candid method (and `/ping`), with the methods each
//! answers and whether it writes.

/// A route: its path, the methods it answers, and whether it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The path, e.g. `/insert_user`.
    pub path: &'static str,
    /// The methods accepted, as an `Allow` header lists them.
    pub methods: &'static [&'static str],
    /// Whether the route writes (see `Call::writes`).
    pub writes: bool,
}

const POST: &[&str] = &["POST"];
const GET: &[&str] = &["GET"];
const GET_POST: &[&str] = &["GET", "POST"];

/// Every route.
pub const ROUTES: [Route; 13] = [
    route("/insert_user", POST, true),
    route("/insert_users", POST, true),
    route("/get_user", GET_POST, false),
    route("/list_users", GET, false),
    route("/update_username", POST, true),
    route("/delete_user", POST, true),
    route("/update_users", POST, true),
    route("/delete_users", POST, true),
    route("/count_users", GET, false),
    route("/config", GET, false),
    route("/stats", GET, false),
    route("/ping", GET, false),
    route("/get_user_by_name", GET_POST, false),
];

const fn route(path: &'static str, methods: &'static [&'static str], writes: bool) -> Route {
    Route {
        path,
        methods,
        writes,
    }
}
