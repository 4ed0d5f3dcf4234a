//! A store canister's settings: chosen by the init argument, kept in stable memory, and
//! changed (or kept) by an upgrade's argument. They record the engine that wrote the table,
//! so that an upgrade to another engine's Wasm is refused before anything is written.

use crate::access::Writers;
use crate::budget::{check_budget, UPDATE_INSTRUCTION_LIMIT};
use crate::engine::{EngineConfig, StorageEngine};
use crate::error::StoreError;
use crate::layout::{self, formats, LAYOUT_VERSION};
use candid::{CandidType, Decode, Encode, Principal, Reserved};
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableCell, Storable};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The argument of `init` and `post_upgrade` (both optional in Candid).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct InitArgs<C> {
    /// Who may write. At install `None` means the installer and the controllers; at upgrade
    /// `None` keeps the current writers. `Some(list)` means exactly that list, which must
    /// not be empty.
    pub writers: Option<Vec<Principal>>,
    /// The engine's configuration: a variant whose one case is the engine's name. At install
    /// `None` means the engine's default; at upgrade `None` keeps the current configuration.
    pub config: Option<C>,
    /// Most instructions one update message may spend: a batch that might cost more is
    /// refused up front with the number of rows that fit. From 100,000,000 to
    /// 40,000,000,000 (the IC's update limit). At install `None` means the IC's limit; at
    /// upgrade `None` keeps the current budget.
    pub instruction_budget: Option<u64>,
    /// The stable memory the canister may use, in 64 KiB pages: set it to the memory
    /// allocation the canister has on the IC. Inserts are refused with `StorageFull` once
    /// fewer than 256 pages (16 MiB) are left, so that updates and deletes still work. At
    /// least 257; at install `None` means no limit but the IC's; at upgrade `None` keeps the
    /// current one.
    pub stable_memory_limit_pages: Option<u64>,
    /// The earlier interface's SQLite configuration, replaced by `config`: refused with an
    /// error that says so, rather than ignored.
    pub sqlite: Option<Reserved>,
}

/// The init and upgrade argument of a canister over engine `E`.
pub type InitArgsOf<E> = InitArgs<EngineConfig<E>>;

impl<C> Default for InitArgs<C> {
    fn default() -> Self {
        Self {
            writers: None,
            config: None,
            instruction_budget: None,
            stable_memory_limit_pages: None,
            sqlite: None,
        }
    }
}

impl<E: StorageEngine> InitArgs<EngineConfig<E>> {
    /// Arguments that give only the engine's configuration.
    pub fn with_config(config: E::Config) -> Self {
        Self {
            config: Some(EngineConfig::new(config)),
            ..Self::default()
        }
    }
}

/// Most bytes the encoded [`Settings`] may take. The settings live in the memory manager's
/// first bucket (8 MiB) with the region right after it ([`layout::REGION_FIRST_PAGE`]);
/// 1 MiB (about 30,000 writers) stays well inside that bucket, so the settings never grow
/// into the region.
pub const MAX_SETTINGS_BYTES: usize = 1 << 20;

/// What a store canister keeps about itself in stable memory. `C` is its engine's
/// configuration type ([`StorageEngine::Config`]).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Settings<C> {
    /// Who may write.
    pub writers: Writers,
    /// The engine that wrote the table ([`StorageEngine::NAME`]); `None` in settings saved
    /// before the engine was recorded.
    pub engine: Option<String>,
    /// The layout version ([`LAYOUT_VERSION`]) the canister was installed or last upgraded
    /// with; `None` before it was recorded.
    pub layout_version: Option<u32>,
    /// The engine's configuration.
    pub config: Option<C>,
    /// Where settings saved before the engine was recorded kept the SQLite engines'
    /// configuration: read once, never written again.
    #[serde(rename = "sqlite")]
    pub earlier_config: Option<C>,
    /// The instruction budget of one update message; `None` (also what settings saved
    /// before this field existed decode to) means [`UPDATE_INSTRUCTION_LIMIT`].
    pub instruction_budget: Option<u64>,
    /// The stable memory the canister may use, in pages; `None`: no limit but the IC's.
    pub stable_memory_limit_pages: Option<u64>,
    /// How many Wasm instances have opened the store: 1 at install, one more at every
    /// upgrade (`None` in settings saved before it was kept). It makes each instance's
    /// randomness its own ([`crate::engine::EngineStorage::instance`]).
    pub instances: Option<u64>,
}

impl<C: CandidType + DeserializeOwned + Clone> Storable for Settings<C> {
    const BOUND: Bound = Bound::Unbounded;

    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.clone().into_bytes())
    }

    fn into_bytes(self) -> Vec<u8> {
        // Encoding a value of a Candid type into a fresh buffer cannot fail.
        Encode!(&self).expect("Settings encode as Candid")
    }

    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        // Only `into_bytes` wrote these bytes (every field added since is optional, and an
        // `opt` that does not decode as its type decodes as `null`).
        Decode!(bytes.as_ref(), Settings<C>).expect("stored Settings decode")
    }
}

impl<C: CandidType + DeserializeOwned + Clone> Settings<C> {
    /// The settings of a fresh install of a canister over engine `E` by `installer`.
    pub fn for_install<E: StorageEngine<Config = C>>(
        args: Option<InitArgsOf<E>>,
        installer: Principal,
    ) -> Result<Self, StoreError> {
        let args = args.unwrap_or_default();
        refuse_earlier_sqlite_field(&args)?;
        let config = E::settle_config(args.config.map(EngineConfig::into_inner), None)?;
        let writers = match args.writers {
            Some(principals) => checked_writers(principals)?,
            None => Writers::installer_and_controllers(installer),
        };
        let instruction_budget = checked_budget(args.instruction_budget)?;
        let stable_memory_limit_pages = checked_memory_limit(args.stable_memory_limit_pages)?;
        Self {
            writers,
            engine: Some(E::NAME.to_string()),
            layout_version: Some(LAYOUT_VERSION),
            config: Some(config),
            earlier_config: None,
            instruction_budget,
            stable_memory_limit_pages,
            instances: Some(1),
        }
        .checked_size()
    }

    /// The settings of a canister over engine `E` after an upgrade with `args`: what the
    /// argument gives, the rest kept. Refuses an upgrade to another engine than the one that
    /// wrote the table ([`Settings::check_engine`]).
    pub fn upgraded<E: StorageEngine<Config = C>>(
        self,
        args: Option<InitArgsOf<E>>,
    ) -> Result<Self, StoreError> {
        self.check_engine::<E>()?;
        let args = args.unwrap_or_default();
        refuse_earlier_sqlite_field(&args)?;
        let current = self.config.or(self.earlier_config);
        let config = E::settle_config(args.config.map(EngineConfig::into_inner), current)?;
        let writers = match args.writers {
            Some(principals) => checked_writers(principals)?,
            None => self.writers,
        };
        let instruction_budget = match args.instruction_budget {
            Some(budget) => checked_budget(Some(budget))?,
            None => self.instruction_budget,
        };
        let stable_memory_limit_pages = match args.stable_memory_limit_pages {
            Some(limit) => checked_memory_limit(Some(limit))?,
            None => self.stable_memory_limit_pages,
        };
        Self {
            writers,
            engine: Some(E::NAME.to_string()),
            layout_version: Some(LAYOUT_VERSION),
            config: Some(config),
            earlier_config: None,
            instruction_budget,
            stable_memory_limit_pages,
            instances: Some(self.instances.unwrap_or(0).saturating_add(1)),
        }
        .checked_size()
    }

    /// This Wasm instance's number: how many instances have opened the store, this one
    /// included (an upgrade that traps is discarded with the count it saved).
    pub fn instance(&self) -> u64 {
        self.instances.unwrap_or(0)
    }

    /// `Ok` if the table in this canister was written by engine `E`: the engine these
    /// settings record or, in settings saved before the engine was recorded, the one the
    /// layout shows ([`layout::engine_of_unrecorded_layout`]). Otherwise
    /// [`StoreError::InvalidConfig`] naming both engines, before anything is written.
    pub fn check_engine<E: StorageEngine>(&self) -> Result<(), StoreError> {
        let recorded = match &self.engine {
            Some(engine) => Some(engine.clone()),
            None => layout::engine_of_unrecorded_layout()?.map(str::to_string),
        };
        match recorded {
            Some(engine) if engine != E::NAME => Err(StoreError::invalid_config(format!(
                "this canister's table was written by the {engine} engine; this Wasm runs the \
                 {} engine, which cannot read it: upgrade with a {engine} canister's Wasm",
                E::NAME
            ))),
            _ => Ok(()),
        }
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
        // `StableCell::init` would overwrite a memory that does not hold a cell.
        if !formats::starts_with(&memory, formats::STABLE_CELL_MAGIC) {
            return Err(StoreError::invalid_config(
                "no settings in stable memory: this canister was not installed as a userstore canister",
            ));
        }
        let placeholder = Settings {
            writers: Writers::only(Vec::new()),
            engine: None,
            layout_version: None,
            config: None,
            earlier_config: None,
            instruction_budget: None,
            stable_memory_limit_pages: None,
            instances: None,
        };
        Ok(StableCell::init(memory, placeholder).get().clone())
    }
}

/// Refuses an init or upgrade argument whose `config` did not decode as this engine's: a
/// configuration for another engine (another case of the variant) decodes as `None`, as
/// Candid decodes every `opt` value of another type, so the raw argument `bytes` are read
/// again for whether they carry a `config` at all.
pub fn refuse_foreign_config<E: StorageEngine>(
    args: &Option<InitArgsOf<E>>,
    bytes: &[u8],
) -> Result<(), StoreError> {
    let decoded = args.as_ref().is_some_and(|args| args.config.is_some());
    if decoded || !carries_config(bytes) {
        return Ok(());
    }
    Err(StoreError::invalid_config(format!(
        "the configuration given is not the {name} engine's, which this canister runs: pass \
         `config = opt variant {{ {name} = ... }}`",
        name = E::NAME
    )))
}

/// Whether the Candid argument `bytes` of `init` or `post_upgrade` carries a `config` field
/// that is not `null`, whatever its type.
fn carries_config(bytes: &[u8]) -> bool {
    /// The argument's `config`, of any type.
    #[derive(Deserialize)]
    struct AnyConfig {
        config: Option<Reserved>,
    }
    impl CandidType for AnyConfig {
        fn _ty() -> candid::types::Type {
            candid::types::TypeInner::Record(vec![candid::types::Field {
                id: candid::types::Label::Named("config".to_string()).into(),
                ty: Option::<Reserved>::ty(),
            }])
            .into()
        }
        fn idl_serialize<S: candid::types::Serializer>(&self, _: S) -> Result<(), S::Error> {
            unreachable!("only decoded")
        }
    }
    matches!(
        candid::decode_one::<Option<AnyConfig>>(bytes),
        Ok(Some(AnyConfig { config: Some(_) }))
    )
}

/// Refuses the earlier interface's `sqlite` field, which `config` replaced.
fn refuse_earlier_sqlite_field<C>(args: &InitArgs<C>) -> Result<(), StoreError> {
    match args.sqlite {
        Some(_) => Err(StoreError::invalid_config(
            "the `sqlite` field of the init argument was replaced by `config`: pass \
             `config = opt variant { <engine> = <its configuration> }`",
        )),
        None => Ok(()),
    }
}

/// A list of writers, which must not be empty: an empty list would lock out everyone,
/// controllers included, until an upgrade.
fn checked_writers(principals: Vec<Principal>) -> Result<Writers, StoreError> {
    if principals.is_empty() {
        return Err(StoreError::invalid_config(
            "writers must list at least one principal; to let only the controllers write, \
             list one of them",
        ));
    }
    Ok(Writers::only(principals))
}
/// Checks a configured stable memory limit: more than the headroom.
fn checked_memory_limit(limit: Option<u64>) -> Result<Option<u64>, StoreError> {
    let minimum = crate::limits::HEADROOM_PAGES + 1;
    match limit {
        Some(pages) if pages < minimum => Err(StoreError::invalid_config(format!(
            "stable_memory_limit_pages must be at least {minimum}, not {pages}"
        ))),
        limit => Ok(limit),
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
    use crate::btree::{BTreeCanisterStore, BTreeConfig};
    use crate::sqlite_shared::{JournalMode, SqliteConfig};
    use crate::{SqliteStore, StableSqliteStore};
    use ic_stable_structures::VectorMemory;

    fn principal(byte: u8) -> Principal {
        Principal::from_slice(&[byte; 29])
    }

    #[test]
    fn an_install_records_the_engine_and_its_configuration() {
        let settings = Settings::for_install::<SqliteStore>(None, principal(1)).unwrap();
        assert_eq!(
            settings.writers,
            Writers::installer_and_controllers(principal(1))
        );
        assert_eq!(settings.engine.as_deref(), Some("Sqlite"));
        assert_eq!(settings.layout_version, Some(LAYOUT_VERSION));
        assert_eq!(settings.config, Some(SqliteConfig::default()));
        let memory = VectorMemory::default();
        settings.save(memory.clone());
        assert_eq!(Settings::load(memory).unwrap(), settings);
    }

    #[test]
    fn the_earlier_sqlite_field_and_an_empty_writer_list_are_refused() {
        let earlier = InitArgs {
            sqlite: Some(Reserved),
            ..InitArgsOf::<SqliteStore>::default()
        };
        assert!(matches!(
            Settings::for_install::<SqliteStore>(Some(earlier), principal(1)),
            Err(StoreError::InvalidConfig { .. })
        ));
        let nobody = InitArgs {
            writers: Some(Vec::new()),
            ..InitArgsOf::<BTreeCanisterStore>::default()
        };
        assert!(matches!(
            Settings::for_install::<BTreeCanisterStore>(Some(nobody.clone()), principal(1)),
            Err(StoreError::InvalidConfig { .. })
        ));
        let installed = Settings::for_install::<BTreeCanisterStore>(None, principal(1)).unwrap();
        assert!(matches!(
            installed.upgraded::<BTreeCanisterStore>(Some(nobody)),
            Err(StoreError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn another_engine_s_configuration_is_refused() {
        let sqlite = InitArgsOf::<SqliteStore>::with_config(SqliteConfig::default());
        let bytes = candid::encode_one(Some(sqlite.clone())).unwrap();
        // Candid decodes an `opt` of another type as `null` ...
        let as_btree = candid::decode_one::<Option<InitArgsOf<BTreeCanisterStore>>>(&bytes);
        let as_btree = as_btree.expect("decodes");
        assert_eq!(
            as_btree.as_ref().map(|args| args.config.is_none()),
            Some(true)
        );
        // ... so the raw argument tells that a configuration was given.
        assert!(matches!(
            refuse_foreign_config::<BTreeCanisterStore>(&as_btree, &bytes),
            Err(StoreError::InvalidConfig { .. })
        ));
        let as_stable =
            candid::decode_one::<Option<InitArgsOf<StableSqliteStore>>>(&bytes).expect("decodes");
        assert!(refuse_foreign_config::<StableSqliteStore>(&as_stable, &bytes).is_err());
        let own = candid::decode_one::<Option<InitArgsOf<SqliteStore>>>(&bytes).expect("decodes");
        assert_eq!(own, Some(sqlite));
        assert_eq!(refuse_foreign_config::<SqliteStore>(&own, &bytes), Ok(()));
        // No configuration, or no argument at all, is no configuration.
        for args in [None, Some(InitArgsOf::<BTreeCanisterStore>::default())] {
            let bytes = candid::encode_one(args.clone()).unwrap();
            assert_eq!(
                refuse_foreign_config::<BTreeCanisterStore>(&args, &bytes),
                Ok(())
            );
        }
    }

    #[test]
    fn upgrade_keeps_what_the_argument_does_not_give() {
        let installed = Settings::for_install::<SqliteStore>(None, principal(1)).unwrap();
        let persist = SqliteConfig::with_journal_mode(JournalMode::Persist);
        let args = InitArgsOf::<SqliteStore>::with_config(persist.clone());
        let upgraded = installed
            .clone()
            .upgraded::<SqliteStore>(Some(args))
            .unwrap();
        assert_eq!(upgraded.writers, installed.writers);
        assert_eq!(upgraded.config, Some(persist));
        let writers_only = InitArgs {
            writers: Some(vec![principal(9)]),
            ..InitArgs::default()
        };
        let upgraded = installed
            .upgraded::<SqliteStore>(Some(writers_only))
            .unwrap();
        assert_eq!(upgraded.writers, Writers::only(vec![principal(9)]));
        assert_eq!(upgraded.config, Some(SqliteConfig::default()));
    }

    /// The settings as the release before the engine was recorded saved them.
    #[derive(CandidType, Deserialize, Clone)]
    struct EarlierSettings {
        writers: Writers,
        sqlite: Option<SqliteConfig>,
        instruction_budget: Option<u64>,
    }

    impl Storable for EarlierSettings {
        const BOUND: Bound = Bound::Unbounded;
        fn to_bytes(&self) -> Cow<'_, [u8]> {
            Cow::Owned(Encode!(self).unwrap())
        }
        fn into_bytes(self) -> Vec<u8> {
            Encode!(&self).unwrap()
        }
        fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
            Decode!(bytes.as_ref(), EarlierSettings).unwrap()
        }
    }

    #[test]
    fn settings_saved_before_the_engine_was_recorded_keep_their_configuration() {
        let persist = SqliteConfig::with_journal_mode(JournalMode::Persist);
        let memory = VectorMemory::default();
        StableCell::new(
            memory.clone(),
            EarlierSettings {
                writers: Writers::only(vec![principal(4)]),
                sqlite: Some(persist.clone()),
                instruction_budget: Some(200_000_000),
            },
        );
        let loaded = Settings::<SqliteConfig>::load(memory.clone()).unwrap();
        assert_eq!(loaded.engine, None);
        assert_eq!(loaded.earlier_config, Some(persist.clone()));
        // The thread's stable memory holds no engine's data: nothing to refuse.
        let upgraded = loaded.upgraded::<SqliteStore>(None).unwrap();
        assert_eq!(upgraded.config, Some(persist));
        assert_eq!(upgraded.engine.as_deref(), Some("Sqlite"));
        assert_eq!(upgraded.earlier_config, None);
        assert_eq!(upgraded.writers, Writers::only(vec![principal(4)]));
        assert_eq!(upgraded.instruction_budget, Some(200_000_000));

        // The B-tree canister's earlier settings decode for it too.
        StableCell::new(
            memory.clone(),
            EarlierSettings {
                writers: Writers::only(vec![principal(4)]),
                sqlite: None,
                instruction_budget: None,
            },
        );
        let loaded = Settings::<BTreeConfig>::load(memory).unwrap();
        assert_eq!(loaded.earlier_config, None);
        assert!(loaded.upgraded::<BTreeCanisterStore>(None).is_ok());
    }

    #[test]
    fn an_upgrade_to_another_engine_is_refused_naming_both() {
        let installed = Settings::for_install::<SqliteStore>(None, principal(1)).unwrap();
        let refused = installed.clone().upgraded::<StableSqliteStore>(None);
        match refused {
            Err(StoreError::InvalidConfig { reason }) => {
                assert!(reason.contains("Sqlite engine"), "{reason}");
                assert!(reason.contains("StableSqlite engine"), "{reason}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(installed.upgraded::<SqliteStore>(None).is_ok());
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
        assert!(Settings::<BTreeConfig>::load(VectorMemory::default()).is_err());
        let foreign = VectorMemory::default();
        foreign.grow(1);
        foreign.write(0, b"not a settings cell");
        assert!(matches!(
            Settings::<BTreeConfig>::load(foreign.clone()),
            Err(StoreError::InvalidConfig { .. })
        ));
        let mut kept = [0u8; 19];
        foreign.read(0, &mut kept);
        assert_eq!(&kept, b"not a settings cell");
    }
}
