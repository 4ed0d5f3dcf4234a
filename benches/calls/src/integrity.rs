//! The table after an upgrade, checked through the canister's Candid API: the size sweep
//! upgrades every engine's table at every size (its `upgrade` figure), and the table must
//! come out of it whole, at the largest size as at the smallest.

use crate::reply::{checked, decoded, owner};
use crate::workloads::encode as encoded;
use icrun::Canister;
use userstore::{StoreError, User};
use userstore_benches::tables::{preloaded_user, preloaded_users, ID_STEP};

/// How many users are looked up by id and by name, spread evenly over the table (its first
/// and last included).
const SAMPLES: u64 = 64;

/// The first page read back, in id order.
const PAGE: u32 = 100;

/// Checks that `canister` holds the preloaded table of `rows` users (every position
/// `0..rows`, whatever order filled it): its count, [`SAMPLES`] users read by id and by
/// username, an id between two users absent, and the first page in id order. `what` names
/// the table in the error.
pub fn check_table(canister: &mut Canister, rows: u64, what: &str) -> Result<(), String> {
    let failed = |message: String| format!("{what}, after the upgrade: {message}");
    let count = checked::<u64>(
        &canister.query("count_users", &encoded(())?, owner()),
        "count_users",
    )
    .map_err(failed)?;
    if count != rows {
        return Err(failed(format!("count_users is {count}, not {rows}")));
    }
    for position in sampled_positions(rows) {
        let user = preloaded_user(position * ID_STEP);
        let by_id = query::<User>(canister, "get_user", &encoded((user.id,))?).map_err(failed)?;
        let by_name = query::<User>(
            canister,
            "get_user_by_name",
            &encoded((user.username.clone(),))?,
        )
        .map_err(failed)?;
        for (method, found) in [("get_user", by_id), ("get_user_by_name", by_name)] {
            if found != user {
                return Err(failed(format!("{method} of {user:?} gave {found:?}")));
            }
        }
    }
    // Ids are ID_STEP apart: the id after the first is no user's.
    let absent = canister.query("get_user", &encoded((1u64,))?, owner());
    match decoded::<User>(&absent, "get_user of an absent id").map_err(failed)? {
        Err(StoreError::NotFound { .. }) => {}
        other => {
            return Err(failed(format!(
                "get_user of the absent id 1 gave {other:?}"
            )))
        }
    }
    let page = query::<Vec<User>>(canister, "list_users", &encoded((None::<u64>, PAGE))?)
        .map_err(failed)?;
    if page != preloaded_users(0, rows.min(u64::from(PAGE))) {
        return Err(failed(format!(
            "the first page differs ({} users)",
            page.len()
        )));
    }
    Ok(())
}

/// [`SAMPLES`] positions spread evenly over `0..rows`, the first and the last included
/// (fewer when the table is smaller).
fn sampled_positions(rows: u64) -> Vec<u64> {
    if rows == 0 {
        return Vec::new();
    }
    let samples = SAMPLES.min(rows);
    if samples == 1 {
        return vec![0];
    }
    (0..samples)
        .map(|index| index * (rows - 1) / (samples - 1))
        .collect()
}

fn query<T: candid::CandidType + for<'de> serde::Deserialize<'de>>(
    canister: &mut Canister,
    method: &str,
    arg: &[u8],
) -> Result<T, String> {
    checked::<T>(&canister.query(method, arg, owner()), method)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_canister::filled_page_tree;

    #[test]
    fn a_whole_table_passes_and_a_missing_or_extra_row_fails() {
        let rows = 300;
        let (mut canister, _) = filled_page_tree(rows);
        check_table(&mut canister, rows, "whole").expect("the filled table is whole");
        assert!(check_table(&mut canister, rows + 1, "count").is_err());
        // The last user (a sampled one) replaced by another: the count holds, the lookups fail.
        let last = (rows - 1) * ID_STEP;
        let deleted = canister.update("delete_user", &encoded((last,)).unwrap(), owner());
        checked::<User>(&deleted, "delete_user").expect("deletes");
        let other = User::new(last + 1, "someone-else".to_string());
        let inserted = canister.update("insert_user", &encoded((other,)).unwrap(), owner());
        checked::<()>(&inserted, "insert_user").expect("inserts");
        let error = check_table(&mut canister, rows, "replaced").unwrap_err();
        assert!(error.contains("get_user"), "{error}");
    }

    #[test]
    fn samples_span_the_table_once_each() {
        assert!(sampled_positions(0).is_empty());
        assert_eq!(sampled_positions(1), vec![0]);
        assert_eq!(sampled_positions(3), vec![0, 1, 2]);
        let positions = sampled_positions(10_000);
        assert_eq!(positions.len() as u64, SAMPLES);
        assert_eq!((positions[0], positions[positions.len() - 1]), (0, 9_999));
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
    }
}
