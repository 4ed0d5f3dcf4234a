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
/// which is why the methods return `PhantomData` of their Candid result type. Their entry
/// points and argument decoding are [`__userstore_method!`](crate::__userstore_method)'s.
///
/// The canister crate must depend on `ic-cdk` and on this crate under the name `userstore`
/// with the `canister` feature (Candid export reads the paths in the signatures, so they are
/// spelled `::userstore::…`).
///
/// `export_user_table_api!(Engine)` keeps the state in a static of its own 64 KiB page;
/// `export_user_table_api!(Engine, state_beside_stack)` keeps it above the stack, in the page
/// every message touches anyway, for a canister linked with room for it there
/// (`userstore::service::state_slot`, which says how): one page fewer for every call
/// under the IC's current meter. Every store canister of this workspace uses the second
/// form; the first, which needs no `build.rs`, is compiled here:
///
/// ```no_run
/// # #[cfg(feature = "canister")]
/// # mod canister {
/// userstore::export_user_table_api!(userstore::BTreeCanisterStore);
/// # }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export_user_table_api {
    ($engine:ty) => {
        ::std::thread_local! {
            static __USERSTORE_STATE: ::userstore::service::PageAligned<::std::cell::RefCell<
                Option<::userstore::service::StoreState<$engine>>,
            >> = const { ::userstore::service::PageAligned(::std::cell::RefCell::new(None)) };
        }

        /// Lends the canister's state slot to `f`: a static of its own 64 KiB page.
        fn __userstore_slot<R>(
            f: impl FnOnce(
                &::std::cell::RefCell<Option<::userstore::service::StoreState<$engine>>>,
            ) -> R,
        ) -> R {
            __USERSTORE_STATE.with(|slot| f(&slot.0))
        }

        $crate::__userstore_service!($engine);
    };
    ($engine:ty, state_beside_stack) => {
        /// What the canister keeps above the stack.
        type __UserstoreSlot =
            ::std::cell::RefCell<Option<::userstore::service::StoreState<$engine>>>;

        #[cfg(target_family = "wasm")]
        const _: () = ::std::assert!(
            ::userstore::service::state_slot::slot_bytes::<__UserstoreSlot>()
                <= ::userstore::service::state_slot::room(::std::env!(
                    "USERSTORE_STATE_ROOM",
                    "a canister that keeps its state above the stack links room for it in its \
                     build.rs, which sets USERSTORE_STATE_ROOM (userstore::service::state_slot)"
                )),
            "the canister's state does not fit the room its build.rs links above the stack \
             (USERSTORE_STATE_ROOM: userstore::service::state_slot)"
        );

        /// Lends the canister's state slot to `f`: above the stack, in the stack's top page
        /// (`userstore::service::state_slot`; the canister links with room for it).
        fn __userstore_slot<R>(f: impl FnOnce(&__UserstoreSlot) -> R) -> R {
            #[cfg(target_family = "wasm")]
            {
                // SAFETY: this is the module's only slot above the stack, always of this type.
                f(unsafe {
                    ::userstore::service::state_slot::beside_stack(|| {
                        ::std::cell::RefCell::new(None)
                    })
                })
            }
            // Natively (the canister crate's own tests) there is no such room: a thread's
            // static.
            #[cfg(not(target_family = "wasm"))]
            {
                ::std::thread_local! {
                    static __USERSTORE_STATE: __UserstoreSlot =
                        const { ::std::cell::RefCell::new(None) };
                }
                __USERSTORE_STATE.with(f)
            }
        }

        $crate::__userstore_service!($engine);
    };
}

/// The body of [`export_user_table_api!`](crate::export_user_table_api) over the canister's
/// `__userstore_slot`, wherever the slot is: the state's accessors, the lifecycle and every
/// Candid method.
#[doc(hidden)]
#[macro_export]
macro_rules! __userstore_service {
    ($engine:ty) => {
        /// Lends the canister's state to `f`. It exists from `init`/`post_upgrade` on.
        fn __userstore_state<R>(
            f: impl FnOnce(&mut ::userstore::service::StoreState<$engine>) -> R,
        ) -> R {
            __userstore_slot(|slot| match slot.borrow_mut().as_mut() {
                Some(state) => f(state),
                None => ::ic_cdk::trap("the store is not initialized"),
            })
        }

        /// Keeps the opened state, or traps (the install or upgrade then changes nothing).
        fn __userstore_open(
            opened: Result<::userstore::service::StoreState<$engine>, ::userstore::StoreError>,
        ) {
            match opened {
                Ok(state) => __userstore_slot(|slot| *slot.borrow_mut() = Some(state)),
                Err(error) => ::ic_cdk::trap(error.to_string()),
            }
        }

        #[::ic_cdk::init]
        fn init(args: Option<::userstore::InitArgsOf<$engine>>) {
            let env = ::userstore::service::env::IcEnv;
            let raw_args = ::ic_cdk::api::msg_arg_data();
            __userstore_open(::userstore::service::lifecycle::init(&env, args, &raw_args));
        }

        /// A failed close is logged, not trapped: a trap would block every upgrade, including
        /// one that fixes the cause, and every committed write is in stable memory already.
        #[::ic_cdk::pre_upgrade]
        fn pre_upgrade() {
            if let Some(state) = __userstore_slot(|slot| slot.borrow_mut().take()) {
                if let Err(error) = ::userstore::service::lifecycle::pre_upgrade(state) {
                    ::ic_cdk::api::debug_print(format!("pre_upgrade: {error}"));
                }
            }
        }

        /// Refuses, before the canister pays for running them, ingress writes from anyone but
        /// a writer and arguments longer than their method can need
        /// (`userstore::service::api::inspect`).
        #[cfg_attr(target_family = "wasm", export_name = "canister_inspect_message")]
        #[allow(dead_code)]
        fn __userstore_inspect_message() {
            __userstore_state(|state| ::userstore::service::lifecycle::inspect_message(state));
        }

        #[::ic_cdk::post_upgrade]
        fn post_upgrade(args: Option<::userstore::InitArgsOf<$engine>>) {
            let raw_args = ::ic_cdk::api::msg_arg_data();
            __userstore_open(::userstore::service::lifecycle::post_upgrade(args, &raw_args));
        }

        $crate::__userstore_method! {
            /// Inserts one user.
            update insert_user(user: ::userstore::User) -> Result<(), ::userstore::StoreError> => {
                ::userstore::service::args::with_named_args_or_trap::<::userstore::service::args::InsertUserArgs, _>(|user| {
                    let env = ::userstore::service::env::IcEnv;
                    let result = __userstore_state(|state| ::userstore::service::api::insert_user_parts(state, &env, user));
                    ::userstore::service::env::reply_result(result)
                })
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
                let mut username = ::userstore::UsernameBuf::default();
                let result = __userstore_state(|state| ::userstore::service::api::get_user_into(state, id, &mut username));
                ::userstore::service::env::reply_user(id, result.map(|()| &username))
            }
        }

        $crate::__userstore_method! {
            /// Returns the user with this username (exact UTF-8 bytes, no case folding).
            query get_user_by_name(username: String) -> Result<::userstore::User, ::userstore::StoreError> => {
                ::userstore::service::args::with_text_arg_or_trap(|username| {
                    let result = __userstore_state(|state| ::userstore::service::api::get_user_id_by_name(state, username));
                    let mut name = ::userstore::UsernameBuf::default();
                    name.set(username);
                    match result {
                        Ok(id) => ::userstore::service::env::reply_user(id, Ok(&name)),
                        Err(error) => ::userstore::service::env::reply_user(0, Err(error)),
                    }
                })
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
            update update_username(id: u64, username: String) -> Result<::userstore::User, ::userstore::StoreError> => {
                ::userstore::service::args::with_named_args_or_trap::<::userstore::service::args::RenameArgs, _>(|rename| {
                    let env = ::userstore::service::env::IcEnv;
                    let mut previous = ::userstore::UsernameBuf::default();
                    let result = __userstore_state(|state| {
                        ::userstore::service::api::update_username_into(state, &env, rename, &mut previous)
                    });
                    ::userstore::service::env::reply_user(rename.id, result.map(|()| &previous))
                })
            }
        }

        $crate::__userstore_method! {
            /// Deletes a user; returns it.
            update delete_user(id: u64) -> Result<::userstore::User, ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let mut deleted = ::userstore::UsernameBuf::default();
                let result = __userstore_state(|state| ::userstore::service::api::delete_user_into(state, &env, id, &mut deleted));
                ::userstore::service::env::reply_user(id, result.map(|()| &deleted))
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

        $crate::__userstore_method! {
            /// The number of users.
            query count_users() -> Result<u64, ::userstore::StoreError> {
                let result = __userstore_state(|state| ::userstore::service::api::count_users(state));
                ::userstore::service::env::reply_result(result)
            }
        }

        $crate::__userstore_method! {
            /// The engine, its configuration, the writers and the limits.
            query config() -> ::userstore::service::CanisterConfig<::userstore::EngineConfig<$engine>> {
                let result = __userstore_state(|state| ::userstore::service::api::config(state));
                ::userstore::service::env::reply(result)
            }
        }

        $crate::__userstore_method! {
            /// Rows, stable memory pages, heap pages, and the usernames users share (kept from
            /// before names were unique).
            query stats() -> Result<::userstore::service::Stats, ::userstore::StoreError> {
                let env = ::userstore::service::env::IcEnv;
                let result = __userstore_state(|state| ::userstore::service::api::stats(state, &env));
                ::userstore::service::env::reply_result(result)
            }
        }
    };
}

/// One method of [`export_user_table_api!`](crate::export_user_table_api): the function, the
/// canister entry point that calls it, and its Candid signature for `export_candid!`.
///
/// The entry point is exported here (`canister_update <name>` or `canister_query <name>`)
/// rather than by ic-cdk's `#[update]`/`#[query]`, which would read the arguments into a heap
/// allocation and wrap the call in ic-cdk's task executor (a method context allocated, its
/// tasks polled and cancelled): together about 1,000 instructions and, in an update, a
/// dirtied heap page (docs/metering.md §6), for methods that never await. The arguments
/// are read and decoded by [`args::call_args_or_trap`](crate::service::args::call_args_or_trap):
/// from a stack buffer, directly when they come in `candid`'s own encoding, by `candid`
/// otherwise. Panics still trap with their message: ic-cdk's `init` and `post_upgrade`, which
/// run first in every Wasm instance, install its panic hook.
#[doc(hidden)]
#[macro_export]
macro_rules! __userstore_method {
    (
        $(#[$doc:meta])*
        $kind:ident $name:ident() -> $ret:ty $body:block
    ) => {
        $crate::__userstore_method! {
            @define $(#[$doc])* $kind $name() -> $ret $body { $name() }
        }
    };
    (
        $(#[$doc:meta])*
        $kind:ident $name:ident($($arg:ident: $ty:ty),+) -> $ret:ty => $body:block
    ) => {
        // The method reads its own arguments (borrowed from the message, see
        // `args::with_named_args_or_trap`): the function takes none; the Candid signature
        // declares them.
        $(#[$doc])*
        fn $name() -> ::std::marker::PhantomData<$ret> $body

        const _: () = {
            #[cfg_attr(
                target_family = "wasm",
                export_name = concat!("canister_", stringify!($kind), " ", stringify!($name))
            )]
            #[allow(dead_code)]
            fn entry_point() {
                $name();
            }
        };

        const _: () = {
            $(#[$doc])*
            #[::candid::candid_method($kind)]
            #[allow(dead_code, unused_variables)]
            fn $name($($arg: $ty),+) -> ::std::marker::PhantomData<$ret> {
                unreachable!("only the Candid export reads this signature")
            }
        };
    };
    (
        $(#[$doc:meta])*
        $kind:ident $name:ident($arg:ident: $ty:ty) -> $ret:ty $body:block
    ) => {
        $crate::__userstore_method! {
            @define $(#[$doc])* $kind $name($arg: $ty) -> $ret $body {
                $name(::userstore::service::args::call_args_or_trap::<$ty>())
            }
        }
    };
    (
        $(#[$doc:meta])*
        $kind:ident $name:ident($($arg:ident: $ty:ty),+) -> $ret:ty $body:block
    ) => {
        $crate::__userstore_method! {
            @define $(#[$doc])* $kind $name($($arg: $ty),+) -> $ret $body {{
                let ($($arg,)+) = ::userstore::service::args::call_args_or_trap::<($($ty,)+)>();
                $name($($arg),+)
            }}
        }
    };
    (
        @define $(#[$doc:meta])*
        $kind:ident $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block $call:block
    ) => {
        $(#[$doc])*
        fn $name($($arg: $ty),*) -> ::std::marker::PhantomData<$ret> $body

        const _: () = {
            #[cfg_attr(
                target_family = "wasm",
                export_name = concat!("canister_", stringify!($kind), " ", stringify!($name))
            )]
            #[allow(dead_code)]
            fn entry_point() {
                $call;
            }
        };

        // Apart, so that the function `$call` names is the one above, not this one.
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
