//! Who may write to a store canister.

use crate::error::StoreError;
use candid::{CandidType, Principal};
use serde::{Deserialize, Serialize};

/// The principals allowed to call a store canister's update methods. Reads are public.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Writers {
    /// Principals that may write.
    pub principals: Vec<Principal>,
    /// Whether the canister's controllers (as they are at the time of the call) may write too.
    pub controllers: bool,
}

impl Writers {
    /// The default: the principal that installed the canister, and its controllers.
    pub fn installer_and_controllers(installer: Principal) -> Self {
        Self {
            principals: vec![installer],
            controllers: true,
        }
    }

    /// Exactly these principals (controllers only if listed).
    pub fn only(principals: Vec<Principal>) -> Self {
        Self {
            principals,
            controllers: false,
        }
    }

    /// `Ok` if `caller` may write; [`StoreError::Unauthorized`] otherwise. `is_controller` is
    /// asked only when the caller is not listed (it is a system call on the IC).
    pub fn authorize(
        &self,
        caller: Principal,
        is_controller: impl FnOnce(&Principal) -> bool,
    ) -> Result<(), StoreError> {
        if self.principals.contains(&caller) || (self.controllers && is_controller(&caller)) {
            Ok(())
        } else {
            Err(StoreError::Unauthorized { caller })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(byte: u8) -> Principal {
        Principal::from_slice(&[byte; 29])
    }

    #[test]
    fn listed_principals_and_controllers_may_write() {
        let writers = Writers::installer_and_controllers(principal(1));
        assert_eq!(writers.authorize(principal(1), |_| false), Ok(()));
        assert_eq!(
            writers.authorize(principal(2), |p| *p == principal(2)),
            Ok(())
        );
        assert_eq!(
            writers.authorize(principal(3), |_| false),
            Err(StoreError::Unauthorized {
                caller: principal(3)
            })
        );
    }

    #[test]
    fn an_explicit_list_excludes_controllers() {
        let writers = Writers::only(vec![principal(1)]);
        assert!(writers.authorize(principal(2), |_| true).is_err());
        assert!(writers
            .authorize(Principal::anonymous(), |_| false)
            .is_err());
    }
}
