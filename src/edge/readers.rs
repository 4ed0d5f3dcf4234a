//! Reads without the lock: a read announces itself and opens the data beside the writer, and
//! a writer's checkpoint waits for the announced reads to end (docs/edge.md, "Reads without
//! the lock").
//!
//! Between two checkpoints a `FileMemory`'s data file does not change, and its log only
//! grows: a reader that opens it sees every commit whose record is whole and drops a torn
//! one, as any open does (src/file_memory, "Exclusive access, and readers beside it"). The
//! one writing a reader must not meet is a checkpoint, which rewrites the data file's blocks
//! and starts the log's next generation. So:
//! - a **reader** creates its announcement, `<data>.read.<millis>.<nonce>.<epoch hash>` (an
//!   exclusive create of an empty file: the name says all, so it is never seen half
//!   written), then looks for the checkpoint marker `<data>.checkpoint` (one `stat`). With no
//!   marker it reads, and removes its announcement when done; with one, it removes its
//!   announcement and takes the lock, as every request did before;
//! - a **writer** (holding the lock) whose commit is due to checkpoint creates the marker,
//!   then lists the announcements, and checkpoints once none is live, looking again for up to
//!   [`CHECKPOINT_WAIT`]; past it, it removes the marker and leaves the checkpoint to a later
//!   commit (the log grows meanwhile; a reader takes about a millisecond). It removes the
//!   marker when the checkpoint is over.
//!
//! Why no reader meets a checkpoint: a reader announces, then looks; a writer marks, then
//! lists. If the reader's look finds no marker, the marker was created after it, so after the
//! announcement, and the writer's listing (after its marker) finds the announcement. A
//! reader that finds the marker does not read without the lock.
//!
//! An announcement left by an instance that trapped is judged stale as a lock is (another
//! epoch's, or older than `USERSTORE_LOCK_STALE_MS`) and removed by the next checkpoint's
//! listing. A marker left by a writer that trapped mid-checkpoint sends readers to the lock
//! until a lock holder removes it: the next checkpoint, or a reader that found it (holding
//! the lock, no checkpoint can run, so the marker is stale).
//!
//! A reader may see a commit whose sync has not returned yet (its writer answers it an instant
//! later), as the next request after a failed sync sees it (src/file_memory, "Errors").

use crate::edge::failure::Failure;
use crate::edge::lock::{exists, files_beside, with_suffix, Holder, LockSettings};
use crate::error::StoreError;
use crate::file_memory::CheckpointGate;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a checkpoint waits for the reads announced before its marker, before it leaves
/// the checkpoint to a later commit: many one-row reads' time (a reader that finds the marker
/// waits for the lock instead of announcing itself again).
pub const CHECKPOINT_WAIT: Duration = Duration::from_millis(50);

/// The sleep between two listings of the announcements while a checkpoint waits: about a
/// one-row read's time (and a wasmtime sleep's least, its executor's 1 ms timer tick).
const CHECKPOINT_LOOK: Duration = Duration::from_millis(1);

/// The marker of a checkpoint in progress: `<data>.checkpoint`.
pub fn marker_path(data: &Path) -> PathBuf {
    with_suffix(data, ".checkpoint")
}

/// What an announcement's name adds to the data file's: `<data>.read.<rest>`.
const ANNOUNCEMENT: &str = ".read.";

/// A host epoch as an announcement's name holds it: 64 bits of FNV-1a, in hex (an epoch is
/// any string the host is given, not always a valid file name).
fn epoch_hash(epoch: &str) -> String {
    let hash = epoch.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// A read announced, without the lock: its announcement is removed when it is dropped.
#[derive(Debug)]
pub struct Reader {
    path: PathBuf,
}

impl Reader {
    /// Announces a read of `data` and looks for a checkpoint: `Some` when the read may go on
    /// without the lock; `None` when a checkpoint is marked (or the announcement's name was
    /// taken), and the read takes the lock.
    pub fn enter(data: &Path, settings: &LockSettings) -> Result<Option<Reader>, Failure> {
        let holder = Holder::new(&settings.epoch);
        let path = with_suffix(
            data,
            &format!(
                "{ANNOUNCEMENT}{}.{:016x}.{}",
                holder.millis,
                holder.nonce,
                epoch_hash(&settings.epoch)
            ),
        );
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::AlreadyExists => return Ok(None),
            Err(error) => {
                return Err(Failure::Store(StoreError::storage(
                    "announcing a read",
                    error,
                )))
            }
        }
        let reader = Reader { path };
        if exists(&marker_path(data)) {
            return Ok(None);
        }
        Ok(Some(reader))
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Removes a checkpoint marker that a writer left behind when it trapped: for a request that
/// holds the lock (then no checkpoint runs) after it found the marker.
pub fn remove_stale_marker(data: &Path) {
    let _ = fs::remove_file(marker_path(data));
}

/// The live announcements of reads of `data`; removes the stale ones.
fn live_readers(data: &Path, settings: &LockSettings) -> std::io::Result<usize> {
    let ours = epoch_hash(&settings.epoch);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut live = 0;
    for (rest, path) in files_beside(data, ANNOUNCEMENT)? {
        let mut parts = rest.split('.');
        let (Some(millis), Some(_nonce), Some(epoch), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(millis) = millis.parse::<u64>() else {
            continue;
        };
        let age = now.saturating_sub(Duration::from_millis(millis));
        if epoch == ours && age <= settings.stale {
            live += 1;
        } else {
            let _ = fs::remove_file(path);
        }
    }
    Ok(live)
}

/// The checkpoint gate of a writer whose readers read without the lock (the module's docs).
pub struct ReaderGate {
    data: PathBuf,
    settings: LockSettings,
}

impl ReaderGate {
    /// The gate of the data file `data`, judging announcements with `settings`.
    pub fn new(data: &Path, settings: &LockSettings) -> Self {
        Self {
            data: data.to_owned(),
            settings: settings.clone(),
        }
    }
}

impl CheckpointGate for ReaderGate {
    fn enter(&self) -> bool {
        let marker = marker_path(&self.data);
        if OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&marker)
            .is_err()
        {
            return false;
        }
        let deadline = Instant::now() + CHECKPOINT_WAIT;
        loop {
            match live_readers(&self.data, &self.settings) {
                Ok(0) => return true,
                Ok(_) if Instant::now() < deadline => std::thread::sleep(CHECKPOINT_LOOK),
                _ => {
                    let _ = fs::remove_file(&marker);
                    return false;
                }
            }
        }
    }

    fn leave(&self) {
        let _ = fs::remove_file(marker_path(&self.data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::tests::settings;

    /// The names in `dir` that announce a read.
    fn announcements(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("the directory")
            .map(|entry| {
                entry
                    .expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.starts_with("userstore.db.read."))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_read_is_announced_while_it_runs_and_its_announcement_goes_with_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("userstore.db");
        let first = Reader::enter(&data, &settings("e"))
            .unwrap()
            .expect("no checkpoint");
        let second = Reader::enter(&data, &settings("e"))
            .unwrap()
            .expect("no checkpoint");
        assert_eq!(announcements(dir.path()).len(), 2);
        assert_eq!(live_readers(&data, &settings("e")).unwrap(), 2);
        drop(first);
        assert_eq!(live_readers(&data, &settings("e")).unwrap(), 1);
        drop(second);
        assert!(announcements(dir.path()).is_empty());
    }

    #[test]
    fn a_checkpoint_waits_for_the_announced_reads_and_runs_once_they_are_over() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("userstore.db");
        let gate = ReaderGate::new(&data, &settings("e"));
        let reader = Reader::enter(&data, &settings("e"))
            .unwrap()
            .expect("no checkpoint");
        let started = Instant::now();
        assert!(!gate.enter(), "a checkpoint ran under a read");
        assert!(started.elapsed() >= CHECKPOINT_WAIT, "it did not wait");
        assert!(
            !marker_path(&data).exists(),
            "the marker of a deferred checkpoint stayed"
        );
        // A read that ends while the checkpoint waits lets it run.
        let ending = std::thread::spawn(move || {
            std::thread::sleep(CHECKPOINT_WAIT / 5);
            drop(reader);
        });
        assert!(gate.enter(), "the checkpoint never ran");
        ending.join().expect("the read ended");
        assert!(
            marker_path(&data).exists(),
            "a running checkpoint is marked"
        );
        // A read that comes while the checkpoint runs takes the lock, and leaves nothing.
        assert!(Reader::enter(&data, &settings("e")).unwrap().is_none());
        assert!(announcements(dir.path()).is_empty());
        gate.leave();
        assert!(!marker_path(&data).exists());
        assert!(Reader::enter(&data, &settings("e")).unwrap().is_some());
    }

    #[test]
    fn announcements_of_another_epoch_or_too_old_are_stale_and_removed() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("userstore.db");
        // Left by instances that trapped: another host run's, and this one's long ago.
        std::mem::forget(Reader::enter(&data, &settings("old-host")).unwrap());
        let long_ago = format!("userstore.db.read.1000.{:016x}.{}", 7, epoch_hash("e"));
        fs::write(dir.path().join(&long_ago), "").expect("an old announcement");
        // Not announcements: another data file's, and a name this layout never writes.
        fs::write(dir.path().join("other.db.read.1.2.3"), "").expect("another file's");
        fs::write(dir.path().join("userstore.db.read.x"), "").expect("a foreign name");
        assert_eq!(announcements(dir.path()).len(), 3);
        let gate = ReaderGate::new(&data, &settings("e"));
        assert!(gate.enter(), "stale announcements held the checkpoint off");
        assert_eq!(
            announcements(dir.path()),
            vec!["userstore.db.read.x".to_owned()]
        );
        assert!(dir.path().join("other.db.read.1.2.3").exists());
        gate.leave();
    }

    #[test]
    fn a_reader_that_finds_the_marker_reads_nothing_without_the_lock() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("userstore.db");
        fs::write(marker_path(&data), "").expect("a marker");
        assert!(Reader::enter(&data, &settings("e")).unwrap().is_none());
        assert!(announcements(dir.path()).is_empty());
        remove_stale_marker(&data);
        assert!(Reader::enter(&data, &settings("e")).unwrap().is_some());
    }

    #[test]
    fn the_epoch_s_hash_tells_epochs_apart_and_fits_a_file_name() {
        assert_eq!(epoch_hash("e"), epoch_hash("e"));
        assert_ne!(epoch_hash("1-2"), epoch_hash("2-1"));
        let hash = epoch_hash("a/b c");
        assert_eq!(hash.len(), 16);
        assert!(hash.bytes().all(|byte| byte.is_ascii_hexdigit()));
    }
}
