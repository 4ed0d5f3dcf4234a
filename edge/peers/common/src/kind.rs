//! Which engine a data file belongs to, read from its first bytes, so that a peer refuses a
//! file of another engine with [`StoreError::InvalidConfig`] naming it, before its own
//! library reads the file as its own (or, worse, repairs it).

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;
use userstore::StoreError;

/// The first bytes of a redb database.
pub const REDB_MAGIC: &[u8] = &[b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// The first bytes of a SQLite database.
pub const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// The first bytes of the edge host's own data file (`userstore::edge::header`).
pub const EDGE_MAGIC: &[u8] = b"USEREDGE";

/// Bytes read to tell a file's kind: the edge header's magic, version, length and name.
const SNIFF_BYTES: usize = 8 + 4 + 1 + 255;

/// What a data file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// No file, or an empty one: a new database.
    Empty,
    /// A redb database.
    Redb,
    /// A SQLite database.
    Sqlite,
    /// The edge host's own data, of the named engine.
    Edge(String),
    /// Anything else.
    Unknown,
}

impl FileKind {
    /// Reads the kind of the file at `path`.
    pub fn of(path: &Path) -> Result<Self, StoreError> {
        let mut file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Self::Empty),
            Err(error) => return Err(StoreError::storage("opening the data file", error)),
        };
        let mut bytes = Vec::with_capacity(SNIFF_BYTES);
        (&mut file)
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut bytes)
            .map_err(|error| StoreError::storage("reading the data file", error))?;
        Ok(Self::of_bytes(&bytes))
    }

    /// The kind of a file that starts with `bytes`.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        if bytes.is_empty() {
            Self::Empty
        } else if bytes.starts_with(REDB_MAGIC) {
            Self::Redb
        } else if bytes.starts_with(SQLITE_MAGIC) {
            Self::Sqlite
        } else if bytes.starts_with(EDGE_MAGIC) {
            let name = bytes
                .get(12)
                .and_then(|length| bytes.get(13..13 + usize::from(*length)))
                .map(|name| String::from_utf8_lossy(name).into_owned())
                .unwrap_or_default();
            Self::Edge(name)
        } else {
            Self::Unknown
        }
    }

    /// How an error message names this kind.
    pub fn describe(&self) -> String {
        match self {
            Self::Empty => "nothing".to_owned(),
            Self::Redb => "a redb database".to_owned(),
            Self::Sqlite => "a SQLite database".to_owned(),
            Self::Edge(engine) => format!("userstore edge data of the {engine} engine"),
            Self::Unknown => "something else than a database".to_owned(),
        }
    }
}

/// Checks that the file at `path` is empty, absent or of `expected` kind; otherwise
/// [`StoreError::InvalidConfig`] saying what it holds and that `engine` cannot open it.
pub fn check_file(path: &Path, expected: &FileKind, engine: &str) -> Result<(), StoreError> {
    let kind = FileKind::of(path)?;
    if kind == FileKind::Empty || &kind == expected {
        return Ok(());
    }
    Err(StoreError::invalid_config(format!(
        "the data file {} holds {}; the {engine} engine cannot open it (use another data file)",
        path.display(),
        kind.describe()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_by_their_first_bytes() {
        assert_eq!(FileKind::of_bytes(b""), FileKind::Empty);
        assert_eq!(
            FileKind::of_bytes(b"SQLite format 3\0rest"),
            FileKind::Sqlite
        );
        assert_eq!(FileKind::of_bytes(REDB_MAGIC), FileKind::Redb);
        let mut edge = b"USEREDGE\x01\0\0\0\x08PageTree".to_vec();
        edge.extend_from_slice(&[0; 16]);
        assert_eq!(
            FileKind::of_bytes(&edge),
            FileKind::Edge("PageTree".to_owned())
        );
        assert_eq!(
            FileKind::of_bytes(b"USEREDGE"),
            FileKind::Edge(String::new())
        );
        assert_eq!(FileKind::of_bytes(b"hello"), FileKind::Unknown);
    }
}
