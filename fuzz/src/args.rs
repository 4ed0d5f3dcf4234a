//! The service's argument decoding: any bytes, for every argument list of the API. The direct
//! path must never panic, and whatever it reads must be what `candid` decodes; the borrowed
//! reading of a one-user call must agree with the owned one.

use std::fmt::Debug;
use userstore::service::args::{self, Args, InsertUserArgs, RenameArgs};
use userstore::User;

fn agrees<A: Args + PartialEq + Debug>(bytes: &[u8]) {
    let _ = args::decode::<A>(bytes);
    if let Some(direct) = args::read::<A>(bytes) {
        let candid = A::decode_with_candid(bytes);
        assert_eq!(
            candid.ok(),
            Some(direct),
            "the direct path and candid differ"
        );
    }
}

/// The target.
pub fn check(bytes: &[u8]) {
    agrees::<u64>(bytes);
    agrees::<User>(bytes);
    agrees::<Vec<User>>(bytes);
    agrees::<Vec<u64>>(bytes);
    agrees::<(u64, String)>(bytes);
    agrees::<(Option<u64>, u32)>(bytes);
    let owned = args::read::<User>(bytes).map(|user| (user.id, user.username));
    let borrowed = args::read_named::<InsertUserArgs>(bytes).map(|p| (p.id, p.username.to_owned()));
    assert_eq!(borrowed, owned, "a user read borrowed and owned");
    let owned = args::read::<(u64, String)>(bytes);
    let borrowed = args::read_named::<RenameArgs>(bytes).map(|p| (p.id, p.username.to_owned()));
    assert_eq!(borrowed, owned, "a rename read borrowed and owned");
}
