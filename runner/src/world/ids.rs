//! Canister ids: the n-th canister a [`super::World`] creates gets the IC's
//! n-th canister id of a subnet, `[n as u64 big-endian, 0x01, 0x01]`
//! (n = 0 is `rwlgt-iiaaa-aaaaa-aaaaa-cai`, n = 1 `rrkah-fqaaa-aaaaa-aaaaq-cai`).

use candid::Principal;

/// The two bytes after the index: "opaque id" class of canister principals.
const SUFFIX: [u8; 2] = [0x01, 0x01];

/// The principal bytes of canister number `n`.
pub fn canister_id(n: u64) -> Vec<u8> {
    let mut id = n.to_be_bytes().to_vec();
    id.extend_from_slice(&SUFFIX);
    id
}

/// The number `n` of a canister id made by [`canister_id`], if `id` is one.
pub fn canister_number(id: &[u8]) -> Option<u64> {
    let (index, suffix) = id.split_at_checked(8)?;
    if suffix != SUFFIX {
        return None;
    }
    Some(u64::from_be_bytes(index.try_into().ok()?))
}

/// The textual form of a principal (`rwlgt-iiaaa-...`), or hex if the bytes
/// are not a valid principal.
pub fn text(id: &[u8]) -> String {
    // A principal has at most 29 bytes.
    if id.len() <= 29 {
        Principal::from_slice(id).to_text()
    } else {
        let digits: String = id.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("0x{digits}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_subnet_scheme() {
        assert_eq!(canister_id(0), vec![0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(canister_id(258), vec![0, 0, 0, 0, 0, 0, 1, 2, 1, 1]);
        assert_eq!(canister_number(&canister_id(258)), Some(258));
        assert_eq!(canister_number(&[0, 0, 0, 0, 0, 0, 0, 0, 1, 2]), None);
        assert_eq!(canister_number(&[4]), None);
        assert_eq!(text(&canister_id(0)), "rwlgt-iiaaa-aaaaa-aaaaa-cai");
        assert_eq!(text(&canister_id(1)), "rrkah-fqaaa-aaaaa-aaaaq-cai");
        assert_eq!(text(&[4]), "2vxsx-fae");
    }
}
