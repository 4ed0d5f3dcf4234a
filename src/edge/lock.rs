//! One request at a time on a data file, across the instances `wasmtime serve` runs
//! concurrently, without file locks (WASI has none): a lock file, `<data>.lock`, created with
//! an exclusive create (of two creators exactly one succeeds): a hard link to a staging file
//! that already holds the contents, so a lock file is never seen empty (`create_exclusive`).
//!
//! Every write takes it, and every read that cannot go beside the writer (a read on a
//! `FileMemory` announces itself instead, [`crate::edge::readers`]; the peers' reads, and
//! every read with `USERSTORE_SHARED_READS=0`, take it). It holds the host epoch
//! (`USERSTORE_HOST_EPOCH`, new at every host start), the time it was taken and a nonce; the
//! holder removes it when done ([`Lock`]'s `Drop`, on every path, errors included).
//!
//! A holder that dies leaves its lock behind, which is broken:
//! - a lock of another epoch was left by a host that no longer runs (one host serves a data
//!   directory at a time, and every start has a new epoch), so no request holds it: it is
//!   broken at once;
//! - a lock of this epoch is broken once older than the stale timeout
//!   (`USERSTORE_LOCK_STALE_MS`, 30 s by default): its instance trapped (a Wasm trap runs
//!   no `Drop`). A live request takes milliseconds (the limits bound every request), far
//!   below the timeout; a holder that took longer could lose its lock, the one case this
//!   scheme does not cover.
//!
//! Why breaking is safe: a breaker first takes a second exclusive file, `<data>.lock.break`,
//! so breakers run one at a time; holding it, it reads the lock again and removes it only if
//! it still holds exactly what was judged stale (the nonce makes every lock's contents
//! unique). Only breakers remove a lock that is not their own, so between that read and the
//! removal nobody can replace the stale lock: a breaker never removes a live lock. A holder
//! releasing its lock likewise removes it only if it is still its own.
//!
//! Waiting is in line: a request that finds the lock taken takes a ticket (below, "The line")
//! and tries the lock again only when its ticket is the first, until the deadline
//! (`USERSTORE_LOCK_WAIT_MS`), then the request is answered 503. The data stays consistent
//! even across a break: the `FileMemory` log makes a commit atomic, and an interrupted one is
//! a torn record that the next open ignores.
//!
//! # The line
//! Without it, whoever tried first after a release won, and a request could lose every race
//! until its deadline: with 8 clients of a slow request each (SQLite's `count_users` on a
//! 1,000,000-row table), a waiter retrying every few milliseconds often lost to the request
//! that arrived just after a release (docs/edge.md, "Many requests, no file locks"). So a
//! request that finds the lock taken takes a ticket, a file `<data>.lock.q<N>` (20 digits),
//! and tries the lock only while its ticket is the lowest in the directory; a request that
//! finds no ticket tries it at once. Tickets are numbered by the clock in microseconds, or one
//! past the highest ticket when that is higher, and written before they appear
//! (`create_exclusive`), so the line keeps the order requests came in.
//!
//! The line decides who tries the lock, never who holds it: the lock file's exclusive create
//! still excludes, so an order it gets wrong (two tickets taken at once, a clock that went
//! back) costs fairness, never exclusion. A ticket's holder removes it once it has the lock or
//! gives up (`Drop`); a ticket left by an instance that trapped while waiting is removed by
//! the ticket behind it once stale, judged as a lock is (another epoch's, or older than the
//! stale timeout; a live ticket is never older than the wait). A ticket removed so is taken
//! again at the end of the line.
//!
//! # The handoff
//! WASI gives a waiter no way to be woken: it learns that the lock is free only by looking.
//! A waiter that listed the line and tried the lock every `retry` (2 ms, `LOCK_RETRY`) left
//! the file idle for about half of that at every handoff, as long as a one-row request holds
//! it, which set every engine's throughput with 8 clients (docs/edge.md, "The handoff"); and a
//! wasmtime sleep is never shorter than its executor's 1 ms timer tick. So a waiter watches
//! one file between its looks at the line, with one `stat`: the first in line the lock file,
//! taking the lock the moment it is gone; every other the lowest ticket in front of it, taking
//! one step forward each time that one is gone (its holder took the lock, or gave up). The two
//! at the front spin, with a yield to the host between two `stat`s (`pause`), for up to `spin`
//! after each step forward, so that the second is first before the lock is freed again; the
//! others, and a front waiter past its spin (behind a long request: a batch, SQLite's
//! `count_users`), watch every `retry`. The whole line (a directory listing) and a stale lock
//! are looked at every `look` (50 ms, `LOCK_LOOK`): the order and the breaking above are
//! unchanged, and a ticket that appears in front (two taken at once) is seen there. What
//! watching costs is the CPU of two spinning waiters per data file, at most `spin` each per
//! step (`USERSTORE_LOCK_SPIN_US`, 0 to never spin).

use crate::edge::failure::Failure;
use crate::error::StoreError;
use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How a lock is taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockSettings {
    /// This host run's epoch.
    pub epoch: String,
    /// Age after which a lock of this epoch is abandoned.
    pub stale: Duration,
    /// How long to wait for the lock before giving up.
    pub wait: Duration,
    /// The sleep between two watches of a waiter that is not spinning (at the lock for the
    /// first in line, at the lowest ticket in front for the others).
    pub retry: Duration,
    /// The time between two looks at the line (listing its directory) and at a stale lock.
    pub look: Duration,
    /// How long a waiter at the front (first or second in line) spins, watching one file,
    /// before it sleeps `retry` between watches.
    pub spin: Duration,
}

/// The lock file of a data file: `<data>.lock`.
pub fn lock_path(data: &Path) -> PathBuf {
    with_suffix(data, ".lock")
}

/// The breaker's file of a data file: `<data>.lock.break`.
pub fn break_path(data: &Path) -> PathBuf {
    with_suffix(data, ".lock.break")
}

/// `path` with `suffix` appended to its name.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// The data file's lock, held until dropped.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    contents: String,
}

impl Lock {
    /// Takes the lock of `data`, breaking a stale one, waiting up to `settings.wait`:
    /// [`Failure::Busy`] when the deadline passes, a storage failure on any other I/O error.
    pub fn acquire(data: &Path, settings: &LockSettings) -> Result<Lock, Failure> {
        let path = lock_path(data);
        let deadline = Instant::now() + settings.wait;
        let mut ticket: Option<Ticket> = None;
        let mut place = Place::Lost;
        // The tickets in front, lowest first, as the last look at the line found them, less
        // those seen gone since; between looks a waiter watches the lowest of them (the
        // module's "The handoff").
        let mut ahead: Vec<PathBuf> = Vec::new();
        // When the line (and a stale lock) is looked at next.
        let mut next_look = Instant::now();
        // Since when the waiter has been at the front: it spins for `settings.spin` from then.
        let mut front_since: Option<Instant> = None;
        loop {
            let now = Instant::now();
            // A waiter without a ticket always looks: it takes its ticket behind the line as
            // this look lists it, without listing it again.
            let look = now >= next_look || ticket.is_none();
            let mut listed: Vec<(u64, PathBuf)> = Vec::new();
            let was = place;
            if look {
                next_look = now + settings.look;
                (place, ahead) = match &ticket {
                    // Without a ticket: the lock at once if nobody waits, else a ticket.
                    None => {
                        listed = line(data)?;
                        let place = if listed.is_empty() {
                            Place::First
                        } else {
                            Place::Lost
                        };
                        (place, Vec::new())
                    }
                    Some(ticket) => ticket.place(data, settings)?,
                };
                if ticket.is_some() && place == Place::Lost {
                    // Removed as stale while it waited: taken again behind the line as it
                    // is now, which the next pass lists (without a ticket, it looks).
                    ticket = None;
                    continue;
                }
            } else if place != Place::First {
                // With a ticket (a waiter without one always looks). Tickets in front that
                // are gone (their holder took the lock, or gave up): one step forward each.
                while ahead.first().is_some_and(|first| !exists(first)) {
                    ahead.remove(0);
                }
                place = Place::behind(ahead.len());
            }
            // The spin starts whenever the waiter comes to the front or moves there (second to
            // first): each step of the handoff gets its own.
            if !place.at_front() {
                front_since = None;
            } else if place != was || front_since.is_none() {
                front_since = Some(now);
            }
            if place == Place::First && (look || !exists(&path)) {
                let holder = Holder::new(&settings.epoch);
                let contents = holder.encode();
                match create_exclusive(&path, &contents, holder.nonce) {
                    // The ticket, if any, is removed after the lock exists (dropped here).
                    Ok(()) => return Ok(Lock { path, contents }),
                    Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                        if look && break_if_stale(data, settings)? {
                            next_look = now;
                            continue;
                        }
                    }
                    Err(error) => return Err(io_failure("creating the lock file", error)),
                }
            }
            if Instant::now() >= deadline {
                return Err(Failure::Busy(format!(
                    "another request held {} for {} ms",
                    path.display(),
                    settings.wait.as_millis()
                )));
            }
            if ticket.is_none() {
                // Behind the tickets the look listed; those in front are watched from here
                // on, the first of them removed now if its holder is gone.
                let (taken, in_front) = Ticket::take(data, &settings.epoch, listed)?;
                ahead = remove_first_if_stale(in_front, settings)?;
                place = Place::behind(ahead.len());
                ticket = Some(taken);
                continue;
            }
            let spinning =
                front_since.is_some_and(|since| now.duration_since(since) < settings.spin);
            if spinning {
                pause();
            } else {
                std::thread::sleep(settings.retry.min(next_look.saturating_duration_since(now)));
            }
        }
    }
}

/// Whether `path` exists: one host call (a `stat`), the cheapest look at the lock or a ticket.
pub(crate) fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// Gives the other requests of the host a turn, without sleeping: a spin's pause. Under
/// `wasmtime serve` a zero-length wait on the monotonic clock yields the request's task to the
/// host's executor once (wasmtime-wasi's `subscribe-duration` of 0); a plain
/// `std::thread::sleep(Duration::ZERO)` would return at once without a host call.
fn pause() {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    wasi::clocks::monotonic_clock::subscribe_duration(0).block();
    #[cfg(not(all(target_os = "wasi", target_env = "p2")))]
    std::thread::yield_now();
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Only our own lock: a breaker may have taken it (see the module's documentation).
        if holds_exactly(&self.path, self.contents.as_bytes()) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Whether the file at `path` holds exactly `expected`: read into a buffer one byte longer,
/// with no size query (each host call is a round trip through the host's file system).
fn holds_exactly(path: &Path, expected: &[u8]) -> bool {
    use std::io::Read;
    let Ok(mut file) = fs::File::open(path) else {
        return false;
    };
    let mut buffer = vec![0; expected.len() + 1];
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    buffer[..filled] == *expected
}

/// What a lock file says about its holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The holder's host epoch.
    pub epoch: String,
    /// When it took the lock, in milliseconds since the Unix epoch.
    pub millis: u64,
    /// A number unique to this lock.
    pub nonce: u64,
}

static NONCES: AtomicU64 = AtomicU64::new(0);

impl Holder {
    /// This request, now.
    pub(crate) fn new(epoch: &str) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        // Unique across instances: the time in nanoseconds, a counter, and the address of a
        // local (instances run in separate linear memories, mostly at different stacks).
        let local = 0u8;
        let nonce = (now.as_nanos() as u64)
            ^ NONCES.fetch_add(1, Ordering::Relaxed).rotate_left(32)
            ^ (std::ptr::addr_of!(local) as u64).rotate_left(48);
        Self {
            epoch: epoch.to_owned(),
            millis: now.as_millis() as u64,
            nonce,
        }
    }

    /// The lock file's contents.
    pub fn encode(&self) -> String {
        format!(
            "userstore-lock\nepoch={}\nmillis={}\nnonce={}\n",
            self.epoch, self.millis, self.nonce
        )
    }

    /// The holder a lock file names, `None` if it names none (torn or foreign contents).
    pub fn decode(contents: &str) -> Option<Self> {
        let mut lines = contents.lines();
        if lines.next()? != "userstore-lock" {
            return None;
        }
        let epoch = lines.next()?.strip_prefix("epoch=")?.to_owned();
        let millis = lines.next()?.strip_prefix("millis=")?.parse().ok()?;
        let nonce = lines.next()?.strip_prefix("nonce=")?.parse().ok()?;
        Some(Self {
            epoch,
            millis,
            nonce,
        })
    }
}

/// Whether a lock file's holder is gone: another epoch's, or this epoch's and older than the
/// stale timeout. Contents that name no holder (a file no host of this version wrote) are
/// judged by the file's modification time, as this epoch's.
fn is_stale(contents: &str, modified: Option<SystemTime>, settings: &LockSettings) -> bool {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let taken = match Holder::decode(contents) {
        Some(holder) if holder.epoch != settings.epoch => return true,
        Some(holder) => Duration::from_millis(holder.millis),
        None => match modified.and_then(|time| time.duration_since(UNIX_EPOCH).ok()) {
            Some(taken) => taken,
            None => return false,
        },
    };
    now.saturating_sub(taken) > settings.stale
}

/// Reads a file and its modification time; `None` if it is gone.
fn read_file(path: &Path) -> Result<Option<(String, Option<SystemTime>)>, Failure> {
    let modified = fs::metadata(path)
        .and_then(|metadata| metadata.modified())
        .ok();
    match fs::read(path) {
        Ok(bytes) => Ok(Some((
            String::from_utf8_lossy(&bytes).into_owned(),
            modified,
        ))),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_failure("reading the lock file", error)),
    }
}

/// Breaks the lock of `data` if it is stale (or already gone): `true` if the caller should
/// try to take it again at once.
fn break_if_stale(data: &Path, settings: &LockSettings) -> Result<bool, Failure> {
    let path = lock_path(data);
    let Some((observed, modified)) = read_file(&path)? else {
        return Ok(true);
    };
    if !is_stale(&observed, modified, settings) {
        return Ok(false);
    }
    let breaker_path = break_path(data);
    let breaker = Holder::new(&settings.epoch);
    match create_exclusive(&breaker_path, &breaker.encode(), breaker.nonce) {
        Ok(()) => {
            // Holding the breaker's file: the lock is removed only if it is still the one
            // judged stale.
            let still_stale = matches!(read_file(&path), Ok(Some((now, _))) if now == observed);
            let removed = if still_stale {
                match fs::remove_file(&path) {
                    Err(error) if error.kind() != ErrorKind::NotFound => Err(error),
                    _ => Ok(()),
                }
            } else {
                Ok(())
            };
            let _ = fs::remove_file(&breaker_path);
            removed.map_err(|error| io_failure("removing a stale lock file", error))?;
            Ok(true)
        }
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {
            // Another breaker is at work, or died at it (then its file is stale too).
            if let Some((contents, modified)) = read_file(&breaker_path)? {
                if is_stale(&contents, modified, settings) {
                    let _ = fs::remove_file(&breaker_path);
                }
            }
            Ok(false)
        }
        Err(error) => Err(io_failure("creating the breaker's file", error)),
    }
}

/// Where a ticket stands in the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The lowest ticket: its holder may try the lock.
    First,
    /// The second lowest: the next to be first.
    Next,
    /// Further behind.
    Behind,
    /// Gone from the line (removed as stale): to be taken again.
    Lost,
}

impl Place {
    /// The place behind `ahead` tickets.
    fn behind(ahead: usize) -> Self {
        match ahead {
            0 => Place::First,
            1 => Place::Next,
            _ => Place::Behind,
        }
    }

    /// Whether the waiter is at the front: first, or next to be.
    fn at_front(self) -> bool {
        matches!(self, Place::First | Place::Next)
    }
}

/// A place in the line in front of the lock (the module's "The line"), held until dropped.
#[derive(Debug)]
struct Ticket {
    number: u64,
    path: PathBuf,
    contents: String,
}

#[cfg(test)]
thread_local! {
    /// How many times this thread listed a line ([`line`]): what the tests count.
    pub(crate) static LISTINGS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Digits of a ticket's number in its file name.
const TICKET_DIGITS: usize = 20;

/// The tickets of `data`'s line, lowest first: `(number, path)`.
fn line(data: &Path) -> Result<Vec<(u64, PathBuf)>, Failure> {
    #[cfg(test)]
    LISTINGS.with(|listings| listings.set(listings.get() + 1));
    let files = files_beside(data, ".lock.q")
        .map_err(|error| io_failure("reading the lock's line", error))?;
    let mut tickets = Vec::new();
    for (digits, path) in files {
        // Staging files (`….new`) and anything else are not tickets.
        if digits.len() != TICKET_DIGITS || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
            continue;
        }
        if let Ok(number) = digits.parse() {
            tickets.push((number, path));
        }
    }
    tickets.sort_unstable();
    Ok(tickets)
}

/// The files beside `data` whose names start with `data`'s name and `suffix`: the rest of
/// each name, and its path.
pub(crate) fn files_beside(data: &Path, suffix: &str) -> std::io::Result<Vec<(String, PathBuf)>> {
    let directory = match data.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Some(name) = data.file_name() else {
        return Ok(Vec::new());
    };
    let prefix = format!("{}{suffix}", name.to_string_lossy());
    let mut found = Vec::new();
    for entry in fs::read_dir(directory)? {
        let entry = match entry {
            Ok(entry) => entry,
            // A file removed while the directory is read (a staging file, a ticket served, a
            // read that ended): WASI's listing reads each entry's metadata, which is then gone.
            Err(error) if error.kind() == ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        let name = entry.file_name();
        if let Some(rest) = name.to_str().and_then(|name| name.strip_prefix(&prefix)) {
            found.push((rest.to_owned(), entry.path()));
        }
    }
    Ok(found)
}

/// The file of ticket `number` in `data`'s line.
pub fn ticket_path(data: &Path, number: u64) -> PathBuf {
    with_suffix(
        data,
        &format!(".lock.q{number:0width$}", width = TICKET_DIGITS),
    )
}

impl Ticket {
    /// Takes a ticket at the end of `data`'s line as `listed` (lowest first, just listed):
    /// the ticket, and the paths of the listed tickets in front of it. A ticket taken since
    /// the listing is not among them; the next look at the line finds it (it costs order,
    /// never exclusion: the module's "The line").
    fn take(
        data: &Path,
        epoch: &str,
        listed: Vec<(u64, PathBuf)>,
    ) -> Result<(Ticket, Vec<PathBuf>), Failure> {
        let holder = Holder::new(epoch);
        let contents = holder.encode();
        let clock = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|now| now.as_micros() as u64)
            .unwrap_or_default();
        let highest = listed.last().map(|(number, _)| *number);
        let mut number = highest.map_or(clock, |highest| clock.max(highest.saturating_add(1)));
        loop {
            let path = ticket_path(data, number);
            match create_exclusive(&path, &contents, holder.nonce) {
                Ok(()) => {
                    let in_front = listed
                        .into_iter()
                        .filter(|(listed, _)| *listed < number)
                        .map(|(_, path)| path)
                        .collect();
                    let ticket = Ticket {
                        number,
                        path,
                        contents,
                    };
                    return Ok((ticket, in_front));
                }
                // Taken by a request at the same moment: the next number.
                Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                    number = number.saturating_add(1);
                }
                Err(error) => return Err(io_failure("taking a ticket for the lock", error)),
            }
        }
    }

    /// Where the ticket stands, with the tickets in front of it (lowest first); removes the
    /// ticket in front of the line if its holder is gone.
    fn place(
        &self,
        data: &Path,
        settings: &LockSettings,
    ) -> Result<(Place, Vec<PathBuf>), Failure> {
        let line = line(data)?;
        let Some(mine) = line.iter().position(|(number, _)| *number == self.number) else {
            return Ok((Place::Lost, Vec::new()));
        };
        let ahead = line.into_iter().take(mine).map(|(_, path)| path).collect();
        let ahead = remove_first_if_stale(ahead, settings)?;
        Ok((Place::behind(ahead.len()), ahead))
    }
}

/// The tickets in front of a waiter (lowest first), less the first if its holder is gone, which
/// is then removed from the line (only if it still holds what was judged stale).
fn remove_first_if_stale(
    mut ahead: Vec<PathBuf>,
    settings: &LockSettings,
) -> Result<Vec<PathBuf>, Failure> {
    if let Some(first) = ahead.first() {
        if let Some((contents, modified)) = read_file(first)? {
            if is_stale(&contents, modified, settings) && holds_exactly(first, contents.as_bytes())
            {
                let _ = fs::remove_file(first);
                ahead.remove(0);
            }
        }
    }
    Ok(ahead)
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if holds_exactly(&self.path, self.contents.as_bytes()) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Creates `path` holding `contents`, atomically: `AlreadyExists` if it exists. The contents
/// go to a staging file first, which is then hard-linked to `path` (a link, like
/// `create_new`, fails if the name exists), so a lock file is never seen empty or torn, even
/// when its holder is killed while taking it. A staging file a kill leaves behind is only
/// litter, never a lock.
fn create_exclusive(path: &Path, contents: &str, nonce: u64) -> std::io::Result<()> {
    let staging = with_suffix(path, &format!(".{nonce:016x}.new"));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&staging)?;
    let linked = file
        .write_all(contents.as_bytes())
        .and_then(|()| fs::hard_link(&staging, path));
    drop(file);
    let _ = fs::remove_file(&staging);
    linked
}

fn io_failure(context: &str, error: std::io::Error) -> Failure {
    Failure::Store(StoreError::storage(context, error))
}
