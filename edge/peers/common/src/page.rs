//! Where a page of the table starts: the one reading of `UserStore::page`'s arguments the peers
//! share (the library's engines compute the same inline, in code the canister figures
//! depend on).

use userstore::{limits, StoreError};

/// The first id of a page of `limit` users after `after`: `Ok(None)` when no id can follow
/// (`after` is `u64::MAX`), [`StoreError::LimitExceeded`] for a page size out of bounds.
pub fn page_start(after: Option<u64>, limit: u32) -> Result<Option<u64>, StoreError> {
    limits::check_page_size(limit)?;
    Ok(match after {
        None => Some(0),
        Some(id) => id.checked_add(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_starts_after_its_id_and_nothing_follows_the_largest() {
        assert_eq!(page_start(None, 10), Ok(Some(0)));
        assert_eq!(page_start(Some(7), 10), Ok(Some(8)));
        assert_eq!(page_start(Some(u64::MAX), 10), Ok(None));
        assert!(page_start(None, 0).is_err());
    }
}
