//! The SQLite settings a [`crate::SqliteFileStore`] opens its file with.

use userstore::StoreError;

/// SQLite's `journal_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JournalMode {
    /// A rollback journal, deleted at each commit (SQLite's default).
    #[default]
    Delete,
    /// A rollback journal, truncated at each commit.
    Truncate,
    /// A rollback journal whose header is zeroed at each commit.
    Persist,
    /// A write-ahead log, its index in the heap (the connection holds the file exclusively:
    /// WASI has no shared memory).
    Wal,
    /// The rollback journal in memory: a crash mid-commit may corrupt the file.
    Memory,
    /// No journal: no rollback, a crash mid-commit may corrupt the file.
    Off,
}

impl JournalMode {
    /// The mode's name in `PRAGMA journal_mode`, as SQLite answers it.
    pub fn pragma(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::Truncate => "truncate",
            Self::Persist => "persist",
            Self::Wal => "wal",
            Self::Memory => "memory",
            Self::Off => "off",
        }
    }

    /// The mode a setting names (`delete`, `truncate`, `persist`, `wal`, `memory`, `off`, in
    /// any case).
    pub fn from_setting(value: &str) -> Result<Self, StoreError> {
        [
            Self::Delete,
            Self::Truncate,
            Self::Persist,
            Self::Wal,
            Self::Memory,
            Self::Off,
        ]
        .into_iter()
        .find(|mode| mode.pragma().eq_ignore_ascii_case(value))
        .ok_or_else(|| {
            StoreError::invalid_config(format!(
                "journal mode {value:?}: use delete, truncate, persist, wal, memory or off"
            ))
        })
    }
}

/// SQLite's `synchronous`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// No syncs: a commit is durable once the OS writes it.
    Off,
    /// Syncs at the critical moments (in WAL mode, not at every commit).
    Normal,
    /// Syncs at every commit (SQLite's default): durable when the call returns.
    #[default]
    Full,
}

impl Synchronous {
    /// The level's name in `PRAGMA synchronous`.
    pub fn pragma(self) -> &'static str {
        match self {
            Self::Off => "OFF",
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
        }
    }

    /// The number SQLite answers `PRAGMA synchronous` with.
    pub fn level(self) -> i64 {
        match self {
            Self::Off => 0,
            Self::Normal => 1,
            Self::Full => 2,
        }
    }

    /// The level a setting names (`off`, `normal`, `full`, in any case).
    pub fn from_setting(value: &str) -> Result<Self, StoreError> {
        [Self::Off, Self::Normal, Self::Full]
            .into_iter()
            .find(|level| level.pragma().eq_ignore_ascii_case(value))
            .ok_or_else(|| {
                StoreError::invalid_config(format!(
                    "synchronous {value:?}: use off, normal or full"
                ))
            })
    }
}

/// How a [`crate::SqliteFileStore`] opens its file: `DELETE` and `FULL` by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqliteFileConfig {
    /// The journal mode.
    pub journal_mode: JournalMode,
    /// The sync level.
    pub synchronous: Synchronous,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_name_every_mode() {
        assert_eq!(JournalMode::from_setting("WAL"), Ok(JournalMode::Wal));
        assert_eq!(JournalMode::from_setting("off"), Ok(JournalMode::Off));
        assert!(JournalMode::from_setting("rollback").is_err());
        assert_eq!(Synchronous::from_setting("normal"), Ok(Synchronous::Normal));
        assert!(Synchronous::from_setting("extra").is_err());
        let config = SqliteFileConfig::default();
        assert_eq!(
            (config.journal_mode, config.synchronous),
            (JournalMode::Delete, Synchronous::Full)
        );
    }
}
