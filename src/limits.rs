//! The published limits of the user table and the checks that enforce them.
//!
//! The limits are chosen so that the largest request and the largest reply fit one IC
//! message: the IC caps ingress and inter-canister payloads at 2 MiB. A batch or a page
//! of [`MAX_BATCH_SIZE`] users of [`MAX_USERNAME_BYTES`] bytes is about
//! 10,000 × (8 + 2 + 128) bytes ≈ 1.4 MB of Candid, under that cap.

use crate::error::{Limit, StoreError};
use crate::user::User;
use std::collections::HashSet;

/// Longest username, in UTF-8 bytes (defined beside the username's buffer, which holds
/// exactly this many).
pub use crate::user::MAX_USERNAME_BYTES;

/// Most users one batch insert may carry.
pub const MAX_BATCH_SIZE: usize = 10_000;

/// Most users one page may return.
pub const MAX_PAGE_SIZE: u32 = 10_000;

/// Most shared usernames `stats` lists (canister and edge alike): the first in byte order.
/// A table has them only if it was written before names were unique; `UserStore::ids_named`
/// finds their users.
pub const SHARED_USERNAMES_REPORTED: usize = 100;

/// Largest user id: SQLite stores the id as its signed 64-bit rowid, so every engine accepts
/// ids up to `i64::MAX` and nothing above, to keep their behaviour identical.
pub const MAX_USER_ID: u64 = i64::MAX as u64;

/// Checks one username: non-empty and at most [`MAX_USERNAME_BYTES`] bytes.
pub fn check_username(username: &str) -> Result<(), StoreError> {
    if username.is_empty() {
        return Err(StoreError::invalid_input("username must not be empty"));
    }
    if username.len() > MAX_USERNAME_BYTES {
        return Err(StoreError::LimitExceeded {
            limit: Limit::UsernameBytes,
            max: MAX_USERNAME_BYTES as u64,
            actual: username.len() as u64,
        });
    }
    Ok(())
}

/// Checks an id against [`MAX_USER_ID`].
pub fn check_id(id: u64) -> Result<(), StoreError> {
    if id > MAX_USER_ID {
        return Err(StoreError::LimitExceeded {
            limit: Limit::UserId,
            max: MAX_USER_ID,
            actual: id,
        });
    }
    Ok(())
}

/// Checks one user (id and username).
pub fn check_user(user: &User) -> Result<(), StoreError> {
    check_id(user.id)?;
    check_username(&user.username)
}

/// Checks a batch: its size, every user in it, and that no id and no username appears twice
/// in it.
///
/// The first problem found, in batch order, is the one reported.
pub fn check_batch(users: &[User]) -> Result<(), StoreError> {
    if users.len() > MAX_BATCH_SIZE {
        return Err(StoreError::LimitExceeded {
            limit: Limit::BatchSize,
            max: MAX_BATCH_SIZE as u64,
            actual: users.len() as u64,
        });
    }
    let mut ids_seen = HashSet::with_capacity(users.len());
    let mut names_seen = HashSet::with_capacity(users.len());
    for user in users {
        check_user(user)?;
        if !ids_seen.insert(user.id) {
            return Err(StoreError::DuplicateId { id: user.id });
        }
        if !names_seen.insert(user.username.as_str()) {
            return Err(crate::unique::taken(&user.username));
        }
    }
    Ok(())
}

/// Checks a batch of ids (for deletes): its size, every id, and that no id appears twice.
pub fn check_id_batch(ids: &[u64]) -> Result<(), StoreError> {
    if ids.len() > MAX_BATCH_SIZE {
        return Err(StoreError::LimitExceeded {
            limit: Limit::BatchSize,
            max: MAX_BATCH_SIZE as u64,
            actual: ids.len() as u64,
        });
    }
    let mut ids_seen = HashSet::with_capacity(ids.len());
    for id in ids {
        check_id(*id)?;
        if !ids_seen.insert(*id) {
            return Err(StoreError::DuplicateId { id: *id });
        }
    }
    Ok(())
}

/// Stable-memory pages (64 KiB each) kept free below a canister's configured stable memory
/// limit: inserts are refused once fewer are left ([`StoreError::StorageFull`]), so that
/// updates and deletes, which may need a few pages (a B-tree delete may allocate a node while
/// it rebalances, SQLite writes its journal), still work. Two of the memory manager's 8 MiB
/// buckets, which a virtual memory grows by at once: 16 MiB.
pub const HEADROOM_PAGES: u64 = 256;

/// Checks that an insert may use stable memory: `used_pages` in use, `limit_pages` the
/// canister's configured limit (`None`: no limit but the IC's).
pub fn check_room_to_insert(used_pages: u64, limit_pages: Option<u64>) -> Result<(), StoreError> {
    match limit_pages {
        Some(limit_pages) if used_pages.saturating_add(HEADROOM_PAGES) > limit_pages => {
            Err(StoreError::StorageFull {
                used_pages,
                limit_pages,
            })
        }
        _ => Ok(()),
    }
}

/// Checks a page size: at least 1 and at most [`MAX_PAGE_SIZE`].
pub fn check_page_size(limit: u32) -> Result<(), StoreError> {
    if limit == 0 {
        return Err(StoreError::invalid_input("page size must be at least 1"));
    }
    if limit > MAX_PAGE_SIZE {
        return Err(StoreError::LimitExceeded {
            limit: Limit::PageSize,
            max: u64::from(MAX_PAGE_SIZE),
            actual: u64::from(limit),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn inserts_are_refused_within_the_headroom_of_the_limit() {
        use super::*;
        assert_eq!(check_room_to_insert(u64::MAX, None), Ok(()));
        assert_eq!(
            check_room_to_insert(1_000 - HEADROOM_PAGES, Some(1_000)),
            Ok(())
        );
        assert_eq!(
            check_room_to_insert(1_001 - HEADROOM_PAGES, Some(1_000)),
            Err(StoreError::StorageFull {
                used_pages: 1_001 - HEADROOM_PAGES,
                limit_pages: 1_000
            })
        );
    }

    use super::*;

    #[test]
    fn username_bounds() {
        assert!(check_username("a").is_ok());
        assert!(check_username(&"x".repeat(MAX_USERNAME_BYTES)).is_ok());
        assert!(matches!(
            check_username(""),
            Err(StoreError::InvalidInput { .. })
        ));
        assert_eq!(
            check_username(&"x".repeat(MAX_USERNAME_BYTES + 1)),
            Err(StoreError::LimitExceeded {
                limit: Limit::UsernameBytes,
                max: 128,
                actual: 129
            })
        );
        // The limit is in bytes, not characters: 43 three-byte characters are 129 bytes.
        assert!(check_username(&"€".repeat(43)).is_err());
    }

    #[test]
    fn batch_rules() {
        let batch = vec![User::new(1, "a"), User::new(2, "b"), User::new(1, "c")];
        assert_eq!(check_batch(&batch), Err(StoreError::DuplicateId { id: 1 }));
        let too_big: Vec<User> = (0..=MAX_BATCH_SIZE as u64)
            .map(|id| User::new(id, "u"))
            .collect();
        assert!(matches!(
            check_batch(&too_big),
            Err(StoreError::LimitExceeded {
                limit: Limit::BatchSize,
                ..
            })
        ));
        assert!(check_batch(&[]).is_ok());
    }

    #[test]
    fn id_and_page_bounds() {
        assert!(check_id(MAX_USER_ID).is_ok());
        assert!(check_id(MAX_USER_ID + 1).is_err());
        assert!(check_page_size(0).is_err());
        assert!(check_page_size(MAX_PAGE_SIZE).is_ok());
        assert!(check_page_size(MAX_PAGE_SIZE + 1).is_err());
    }
}
