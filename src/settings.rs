//! A store canister's settings: chosen by the init argument, kept in stable memory, and
//! changed (or kept) by an upgrade's argument.

use crate::access::Writers;
use crate::budget::{check_budget, UPDATE_INSTRUCTION_LIMIT};
use crate::engine::StorageEngine;
use crate::error::StoreError;
use crate::sqlite::SqliteConfig;
use candid::{CandidType, Decode, Encode, Principal};
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableCell, Storable};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The argument of `init` and `post_upgrade` (both optional in Candid).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct InitArgs {
    /// Who may write. At install `None` means the installer and the controllers; at upgrade
    /// `None` keeps the current writers. `Some(list)` means exactly that list.
    pub writers: Option<Vec<Principal>>,
    /// The SQLite configuration (SQLite canister only; the B-tree canister refuses one).
    /// At install `None` means the default configuration (`SqliteConfig::default`); at
    /// upgrade `None` keeps the current configuration.
    pub sqlite: Option<SqliteConfig>,
    /// Most instructions one update message may spend: a batch that might cost more is
    /// refused up front with the number of rows that fit. From 100,000,000 to
    /// 40,000,000,000 (the IC's update limit). At install `None` means the IC's limit; at
    /// upgrade `None` keeps the current budget.
    pub instruction_budget: Option<u64>,
}

/// Most bytes the encoded [`Settings`] may take. The B-tree canister keeps its settings in
/// the memory manager's first bucket (8 MiB) with its map's region right after it
/// ([`crate::btree::BTREE_REGION_FIRST_PAGE`]); 1 MiB (about 30,000 writers) stays well inside
/// that bucket, so the settings never grow into the map.
pub const MAX_SETTINGS_BYTES: usize = 1 << 20;

/// What a store canister keeps about itself in stable memory.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Who may write.
    pub writers: Writers,
    /// The SQLite configuration, for the SQLite engine.
    pub sqlite: Option<SqliteConfig>,
    /// The instruction budget of one update message; `None` (also what settings saved
    /// before this field existed decode to) means [`UPDATE_INSTRUCTION_LIMIT`].
    pub instruction_budget: Option<u64>,
}

impl Storable for Settings {
    const BOUND: Bound = Bound::Unbounded;

    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.clone().into_bytes())
    }

    fn into_bytes(self) -> Vec<u8> {
        // Encoding a value of a Candid type into a fresh buffer cannot fail.
        Encode!(&self).expect("Settings encode as Candid")
    }

    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        // Only `into_bytes` wrote these bytes.
        Decode!(bytes.as_ref(), Settings).expect("stored Settings decode")
    }
}

impl Settings {
    /// The settings of a fresh install of a canister over engine `E` by `installer`.
    pub fn for_install<E: StorageEngine>(
        args: Option<InitArgs>,
        installer: Principal,
    ) -> Result<Self, StoreError> {
        let args = args.unwrap_or_default();
        let sqlite = E::settle_config(args.sqlite, None)?;
        let writers = match args.writers {
            Some(principals) => Writers::only(principals),
            None => Writers::installer_and_controllers(installer),
        };
        let instruction_budget = checked_budget(args.instruction_budget)?;
        Self {
            writers,
            sqlite,
            instruction_budget,
        }
        .checked_size()
    }

    /// The settings of a canister over engine `E` after an upgrade with `args`: what the
    /// argument gives, the rest kept.
    pub fn upgraded<E: StorageEngine>(self, args: Option<InitArgs>) -> Result<Self, StoreError> {
        let args = args.unwrap_or_default();
        let sqlite = E::settle_config(args.sqlite, self.sqlite)?;
        let writers = args.writers.map(Writers::only).unwrap_or(self.writers);
        let instruction_budget = match args.instruction_budget {
            Some(budget) => checked_budget(Some(budget))?,
            None => self.instruction_budget,
        };
        Self {
            writers,
            sqlite,
            instruction_budget,
        }
        .checked_size()
    }

    /// These settings if they encode to at most [`MAX_SETTINGS_BYTES`]; too many writers
    /// otherwise.
    fn checked_size(self) -> Result<Self, StoreError> {
        let bytes = self.to_bytes().len();
        if bytes > MAX_SETTINGS_BYTES {
            return Err(StoreError::invalid_config(format!(
                "the settings take {bytes} bytes, more than the {MAX_SETTINGS_BYTES} a canister \
                 keeps: list fewer writers"
            )));
        }
        Ok(self)
    }

    /// The instruction budget of one update message in force.
    pub fn effective_instruction_budget(&self) -> u64 {
        self.instruction_budget.unwrap_or(UPDATE_INSTRUCTION_LIMIT)
    }

    /// Stores these settings in `memory`, replacing what was there.
    pub fn save<M: Memory>(&self, memory: M) {
        StableCell::new(memory, self.clone());
    }

    /// Loads the settings a previous install saved in `memory`.
    pub fn load<M: Memory>(memory: M) -> Result<Self, StoreError> {
        // ic-stable-structures' StableCell starts with the magic bytes "SCL"; anything else
        // means this memory never held our settings (and `StableCell::init` would overwrite it).
        let mut magic = [0u8; 3];
        if memory.size() > 0 {
            memory.read(0, &mut magic);
        }
        if &magic != b"SCL" {
            return Err(StoreError::invalid_config(
                "no settings in stable memory: this canister was not installed as a userstore canister",
            ));
        }
        let placeholder = Settings {
            writers: Writers::only(Vec::new()),
            sqlite: None,
            instruction_budget: None,
        };
        Ok(StableCell::init(memory, placeholder).get().clone())
    }
}

fn checked_budget(budget: Option<u64>) -> Result<Option<u64>, StoreError> {
    if let Some(budget) = budget {
        check_budget(budget)?;
    }
    Ok(budget)
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;
    use crate::btree::BTreeCanisterStore;
    use crate::sqlite::JournalMode;
    use crate::SqliteStore;
    use ic_stable_structures::VectorMemory;

    fn principal(byte: u8) -> Principal {
        Principal::from_slice(&[byte; 29])
    }

    #[test]
    fn install_defaults_and_round_trip() {
        let settings = Settings::for_install::<SqliteStore>(None, principal(1)).unwrap();
        assert_eq!(
            settings.writers,
            Writers::installer_and_controllers(principal(1))
        );
        assert_eq!(settings.sqlite, Some(SqliteConfig::default()));
        let memory = VectorMemory::default();
        settings.save(memory.clone());
        assert_eq!(Settings::load(memory).unwrap(), settings);
    }

    #[test]
    fn btree_refuses_sqlite_config() {
        let args = InitArgs {
            writers: None,
            sqlite: Some(SqliteConfig::default()),
            ..InitArgs::default()
        };
        assert!(matches!(
            Settings::for_install::<BTreeCanisterStore>(Some(args), principal(1)),
            Err(StoreError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn upgrade_keeps_what_the_argument_does_not_give() {
        let installed = Settings::for_install::<SqliteStore>(None, principal(1)).unwrap();
        let args = InitArgs {
            writers: None,
            sqlite: Some(SqliteConfig::with_journal_mode(JournalMode::Persist)),
            ..InitArgs::default()
        };
        let upgraded = installed
            .clone()
            .upgraded::<SqliteStore>(Some(args))
            .unwrap();
        assert_eq!(upgraded.writers, installed.writers);
        assert_eq!(
            upgraded.sqlite.map(|config| config.journal_mode),
            Some(JournalMode::Persist)
        );
        let writers_only = InitArgs {
            writers: Some(vec![principal(9)]),
            ..InitArgs::default()
        };
        let upgraded = installed
            .upgraded::<SqliteStore>(Some(writers_only))
            .unwrap();
        assert_eq!(upgraded.writers, Writers::only(vec![principal(9)]));
        assert_eq!(upgraded.sqlite, Some(SqliteConfig::default()));
    }

    #[test]
    fn settings_beyond_their_bound_are_refused_at_install_and_upgrade() {
        let too_many = || InitArgs {
            writers: Some(
                (0..40_000u32)
                    .map(|n| Principal::from_slice(&[&n.to_be_bytes()[..], &[7; 25]].concat()))
                    .collect(),
            ),
            ..InitArgs::default()
        };
        assert!(matches!(
            Settings::for_install::<BTreeCanisterStore>(Some(too_many()), principal(1)),
            Err(StoreError::InvalidConfig { .. })
        ));
        let installed = Settings::for_install::<BTreeCanisterStore>(None, principal(1)).unwrap();
        assert!(matches!(
            installed.upgraded::<BTreeCanisterStore>(Some(too_many())),
            Err(StoreError::InvalidConfig { .. })
        ));
        let many = InitArgs {
            writers: Some(
                (0..1_000u32)
                    .map(|n| Principal::from_slice(&n.to_be_bytes()))
                    .collect(),
            ),
            ..InitArgs::default()
        };
        assert!(Settings::for_install::<BTreeCanisterStore>(Some(many), principal(1)).is_ok());
    }

    #[test]
    fn loading_from_memory_without_settings_is_an_error_and_writes_nothing() {
        assert!(Settings::load(VectorMemory::default()).is_err());
        let foreign = VectorMemory::default();
        foreign.grow(1);
        foreign.write(0, b"not a settings cell");
        assert!(matches!(
            Settings::load(foreign.clone()),
            Err(StoreError::InvalidConfig { .. })
        ));
        let mut kept = [0u8; 19];
        foreign.read(0, &mut kept);
        assert_eq!(&kept, b"not a settings cell");
    }
}
