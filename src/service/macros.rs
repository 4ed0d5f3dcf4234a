//! [`export_user_table_api!`](crate::export_user_table_api): the store canisters' Candid
//! methods as one-line wrappers around [`super::api`] and [`super::lifecycle`].

/// Defines a store canister over the engine type `$engine` (a
/// [`StorageEngine`](crate::engine::StorageEngine)): the state slot, `init`, `pre_upgrade`
/// and `post_upgrade`, and every query and update method of the user-table API. Each method
/// calls the function of [`crate::service::api`] of the same name with
/// [`IcEnv`](crate::service::env::IcEnv) and replies through
/// [`reply_result`](crate::service::env::reply_result) (an `Ok` typed as the value it carries,
/// a subtype of the declared result, with the type table built once per type) or, for
/// `config`, [`reply`](crate::service::env::reply) (the same Candid as ic-cdk's own reply),
/// which is why the methods are `manual_reply` and return `PhantomData` of their Candid
/// result type. Their arguments are decoded by
/// [`args::decode_or_trap`](crate::service::args::decode_or_trap): directly when they come in
/// `candid`'s own encoding, by `candid` otherwise.
///
/// The canister crate must depend on `ic-cdk` and on this crate under the name `userstore`
/// with the `canister` feature (Candid export reads the paths in the signatures, so they are
/// spelled `::userstore::…`).
#[macro_export]
macro_rules! export_user_table_api {
    ($engine:ty) => {
        ::std::thread_local! {
            static __USERSTORE_STATE: ::std::cell::RefCell<
                Option<::userstore::service::StoreState<$engine>>,
            > = const { ::std::cell::RefCell::new(None) };
        }

        /// Lends the canister's state to `f`. It exists from `init`/`post_upgrade` on.
        fn __userstore_state<R>(
            f: impl FnOnce(&mut ::userstore::service::StoreState<$engine>) -> R,
        ) -> R {
            __USERSTORE_STATE.with(|slot| match slot.borrow_mut().as_mut() {
                Some(state) => f(state),
                None => ::ic_cdk::trap("the store is not initialized"),
            })
        }

        /// Keeps the opened state, or traps (the install or upgrade then changes nothing).
        fn __userstore_open(
            opened: Result<::userstore::service::StoreState<$engine>, ::userstore::StoreError>,
        ) {
            match opened {
                Ok(state) => __USERSTORE_STATE.with(|slot| *slot.borrow_mut() = Some(state)),
                Err(error) => ::ic_cdk::trap(error.to_string()),
            }
        }

        #[::ic_cdk::init]
        fn init(args: Option<::userstore::InitArgs>) {
            let env = ::userstore::service::env::IcEnv;
            __userstore_open(::userstore::service::lifecycle::init(&env, args));
        }

        /// A failed close is logged, not trapped: a trap would block every upgrade, including
        /// one that fixes the cause, and every committed write is in stable memory already.
        #[::ic_cdk::pre_upgrade]
        fn pre_upgrade() {
            if let Some(state) = __USERSTORE_STATE.with(|slot| slot.borrow_mut().take()) {
                if let Err(error) = ::userstore::service::lifecycle::pre_upgrade(state) {
                    ::ic_cdk::api::debug_print(format!("pre_upgrade: {error}"));
                }
            }
        }

        #[::ic_cdk::post_upgrade]
        fn post_upgrade(args: Option<::userstore::InitArgs>) {
            __userstore_open(::userstore::service::lifecycle::post_upgrade(args));
        }

        $crate::__userstore_method! {
            /// Inserts one user.
            update insert_user(user: ::userstore::User) -> Result<(), ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let result = __userstore_state(|state| ::userstore::service::api::insert_user(state, &env, user));
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// Inserts a batch of users, all or nothing; returns how many were inserted.
            update insert_users(users: Vec<::userstore::User>) -> Result<u64, ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let result = __userstore_state(|state| ::userstore::service::api::insert_users(state, &env, &users));
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// Returns one user.
            query get_user(id: u64) -> Result<::userstore::User, ::userstore::StoreError> {
                let result = __userstore_state(|state| ::userstore::service::api::get_user(state, id));
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// Returns up to `limit` users in id order after the id `after`.
            query list_users(after: Option<u64>, limit: u32) -> Result<Vec<::userstore::User>, ::userstore::StoreError> {
                let result = __userstore_state(|state| ::userstore::service::api::list_users(state, after, limit));
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// Changes a username; returns the user as it was before.
            update update_username(id: u64, username: String) -> Result<::userstore::User, ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let result = __userstore_state(|state| {
                    ::userstore::service::api::update_username(state, &env, id, &username)
                });
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// Deletes a user; returns it.
            update delete_user(id: u64) -> Result<::userstore::User, ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let result = __userstore_state(|state| ::userstore::service::api::delete_user(state, &env, id));
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// Renames every listed user, all or nothing; returns how many were updated.
            update update_users(users: Vec<::userstore::User>) -> Result<u64, ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let result = __userstore_state(|state| ::userstore::service::api::update_users(state, &env, &users));
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// Deletes every listed user, all or nothing; returns how many were deleted.
            update delete_users(ids: Vec<u64>) -> Result<u64, ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let result = __userstore_state(|state| ::userstore::service::api::delete_users(state, &env, &ids));
                ::userstore::service::env::reply_result(result)
            }
        }

        /// The number of users.
        #[::ic_cdk::query(manual_reply = true)]
        fn count_users() -> ::std::marker::PhantomData<Result<u64, ::userstore::StoreError>> {
            let result = __userstore_state(|state| ::userstore::service::api::count_users(state));
            ::userstore::service::env::reply_result(result)
        }

        /// The engine, its configuration, the writers and the limits.
        #[::ic_cdk::query(manual_reply = true)]
        fn config() -> ::std::marker::PhantomData<::userstore::service::CanisterConfig> {
            let result = __userstore_state(|state| ::userstore::service::api::config(state));
            ::userstore::service::env::reply(result)
        }

        /// Rows, stable memory pages and heap pages.
        #[::ic_cdk::query(manual_reply = true)]
        fn stats() -> ::std::marker::PhantomData<Result<::userstore::service::Stats, ::userstore::StoreError>> {
            let env = ::userstore::service::env::IcEnv;
            let result = __userstore_state(|state| ::userstore::service::api::stats(state, &env));
            ::userstore::service::env::reply_result(result)
        }
    };
}

/// One method of [`export_user_table_api!`](crate::export_user_table_api) with arguments: the
/// `#[update]` or `#[query]` method, whose arguments
/// [`args::decode_or_trap`](crate::service::args::decode_or_trap) decodes, and its Candid
/// signature for `export_candid!`. ic-cdk would describe a method with `decode_with` as taking
/// a `blob`, so the method is `hidden` there and declared here, with its documentation, from
/// the same signature.
#[doc(hidden)]
#[macro_export]
macro_rules! __userstore_method {
    (
        $(#[$doc:meta])*
        $kind:ident $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block
    ) => {
        $(#[$doc])*
        #[::ic_cdk::$kind(
            manual_reply = true,
            decode_with = "::userstore::service::args::decode_or_trap",
            hidden = true
        )]
        fn $name($($arg: $ty),*) -> ::std::marker::PhantomData<$ret> $body

        const _: () = {
            $(#[$doc])*
            #[::candid::candid_method($kind)]
            #[allow(dead_code, unused_variables)]
            fn $name($($arg: $ty),*) -> ::std::marker::PhantomData<$ret> {
                unreachable!("only the Candid export reads this signature")
            }
        };
    };
}
