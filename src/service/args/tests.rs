use super::*;
use candid::{CandidType, Encode};
use proptest::prelude::*;
use std::fmt::Debug;

/// A message `candid` encodes from `args` takes the direct path and gives `args` back.
fn read_back<A: Args + PartialEq + Debug>(message: Vec<u8>, args: A) {
    assert!(
        message.starts_with(A::HEADER),
        "candid's header for {} changed: {:02x?}",
        std::any::type_name::<A>(),
        message
    );
    assert_eq!(read::<A>(&message), Some(args));
}

/// `decode` gives what `candid` gives: the same value, or an error where it has one.
fn agrees_with_candid<A: Args + PartialEq + Debug>(message: &[u8]) -> Result<A, candid::Error> {
    let ours = decode::<A>(message);
    match (&ours, A::decode_with_candid(message)) {
        (Ok(ours), Ok(theirs)) => assert_eq!(ours, &theirs),
        (Err(_), Err(_)) => {}
        (ours, theirs) => panic!("decode: {ours:?}, candid: {theirs:?}, message {message:02x?}"),
    }
    ours
}

#[test]
fn every_header_is_candids_own_encoding_of_the_types() {
    let user = User::new(7, "ab");
    read_back(Encode!(&7_u64).unwrap(), 7_u64);
    read_back(Encode!(&user).unwrap(), user.clone());
    read_back(Encode!(&vec![user.clone()]).unwrap(), vec![user]);
    read_back(Encode!(&vec![7_u64]).unwrap(), vec![7_u64]);
    read_back(Encode!(&7_u64, &"ab").unwrap(), (7_u64, "ab".to_owned()));
    read_back(Encode!(&Some(7_u64), &9_u32).unwrap(), (Some(7_u64), 9_u32));
    read_back(Encode!(&None::<u64>, &9_u32).unwrap(), (None, 9_u32));
    read_back(Encode!(&Vec::<User>::new()).unwrap(), Vec::<User>::new());
    read_back(Encode!(&"ab").unwrap(), "ab".to_owned());
}

#[test]
fn a_text_argument_is_borrowed_from_its_message_or_left_to_candid() {
    assert_eq!(read_text(&Encode!(&"alice").unwrap()), Some("alice"));
    assert_eq!(read_text(&Encode!(&"").unwrap()), Some(""));
    // Another type, a second argument, or bytes past the value: not the direct path.
    assert_eq!(read_text(&Encode!(&7_u64).unwrap()), None);
    assert_eq!(read_text(&Encode!(&"a", &"b").unwrap()), None);
    let mut longer = Encode!(&"alice").unwrap();
    longer.push(0);
    assert_eq!(read_text(&longer), None);
    // Not UTF-8: refused here, and by candid too.
    let mut invalid = Encode!(&"ab").unwrap();
    let last = invalid.len() - 1;
    invalid[last] = 0xFF;
    assert_eq!(read_text(&invalid), None);
    assert!(agrees_with_candid::<String>(&invalid).is_err());
}

/// A client's own user type with one more field: `candid` accepts it (the field is skipped).
#[derive(CandidType)]
struct UserWithEmail {
    id: u64,
    username: String,
    email: String,
}

#[test]
fn a_subtype_goes_to_candid_and_decodes_as_before() {
    let message = Encode!(&UserWithEmail {
        id: 3,
        username: "carol".into(),
        email: "c@example.org".into(),
    })
    .unwrap();
    assert_eq!(read::<User>(&message), None);
    assert_eq!(
        agrees_with_candid::<User>(&message).unwrap(),
        User::new(3, "carol")
    );
}

#[test]
fn messages_that_are_not_canonical_go_to_candid() {
    let canonical = Encode!(&User::new(1, "ab")).unwrap();
    let header = User::HEADER.len();

    let mut trailing = canonical.clone();
    trailing.push(0);
    let truncated = &canonical[..canonical.len() - 1];
    let mut invalid_utf8 = canonical.clone();
    invalid_utf8[header + 9] = 0xff;
    // The text length 2 as two LEB128 bytes.
    let mut long_length = canonical[..header + 8].to_vec();
    long_length.extend_from_slice(&[0x82, 0x00, b'a', b'b']);

    for message in [
        &trailing[..],
        truncated,
        &invalid_utf8,
        &long_length,
        b"",
        b"DIDL",
    ] {
        assert_eq!(read::<User>(message), None, "{message:02x?}");
        // Whatever candid makes of it, `decode` makes the same.
        let _ = agrees_with_candid::<User>(message);
    }
    assert!(decode::<User>(&trailing).is_err());
    assert!(decode::<User>(&invalid_utf8).is_err());

    let mut bad_opt_tag = Encode!(&Some(1_u64), &2_u32).unwrap();
    bad_opt_tag[<(Option<u64>, u32)>::HEADER.len()] = 2;
    assert_eq!(read::<(Option<u64>, u32)>(&bad_opt_tag), None);
    assert!(agrees_with_candid::<(Option<u64>, u32)>(&bad_opt_tag).is_err());
}

#[test]
fn a_forged_vector_length_allocates_nothing_and_is_refused() {
    let mut message = <Vec<u64>>::HEADER.to_vec();
    // 2^62 elements announced, none sent.
    message.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]);
    assert_eq!(read::<Vec<u64>>(&message), None);
    assert!(agrees_with_candid::<Vec<u64>>(&message).is_err());
}

fn users() -> impl Strategy<Value = User> {
    (any::<u64>(), "\\PC{0,40}").prop_map(|(id, name)| User::new(id, name))
}

proptest! {
    #[test]
    fn candids_messages_take_the_direct_path(
        user in users(),
        batch in prop::collection::vec(users(), 0..20),
        ids in prop::collection::vec(any::<u64>(), 0..50),
        after in any::<Option<u64>>(),
        limit in any::<u32>(),
    ) {
        read_back(Encode!(&user.id).unwrap(), user.id);
        read_back(Encode!(&user).unwrap(), user.clone());
        read_back(Encode!(&batch).unwrap(), batch);
        read_back(Encode!(&ids).unwrap(), ids);
        read_back(Encode!(&user.id, &user.username).unwrap(), (user.id, user.username));
        read_back(Encode!(&after, &limit).unwrap(), (after, limit));
    }

    /// The borrowed reading of a one-user call gives what `candid` decodes, borrowed from
    /// the message, and refuses (for `candid` to decode) whatever the owned reading refuses.
    #[test]
    fn named_arguments_read_as_candid_decodes_them(user in users(), byte in any::<u8>()) {
        let insert = Encode!(&user).unwrap();
        let parts = read_named::<InsertUserArgs>(&insert);
        prop_assert_eq!(parts, Some(IdAndName { id: user.id, username: &user.username }));
        let rename = Encode!(&user.id, &user.username).unwrap();
        let parts = read_named::<RenameArgs>(&rename);
        prop_assert_eq!(parts, Some(IdAndName { id: user.id, username: &user.username }));
        // The other call's message is not read as this one's.
        prop_assert_eq!(read_named::<InsertUserArgs>(&rename), None);
        let mut altered = insert.clone();
        let last = altered.len() - 1;
        altered[last] = byte;
        let owned = read::<User>(&altered);
        let borrowed = read_named::<InsertUserArgs>(&altered);
        prop_assert_eq!(
            borrowed.map(|parts| (parts.id, parts.username.to_owned())),
            owned.map(|user| (user.id, user.username))
        );
    }

    /// Any change to a message (a byte replaced, bytes cut or added) decodes as `candid`
    /// decodes it, whichever path it takes.
    #[test]
    fn every_altered_message_decodes_as_candid_decodes_it(
        batch in prop::collection::vec(users(), 0..4),
        position in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in 0_usize..4,
        extra in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        let mut message = Encode!(&batch).unwrap();
        let at = position.index(message.len());
        message[at] = byte;
        message.truncate(message.len().saturating_sub(cut));
        message.extend_from_slice(&extra);
        let _ = agrees_with_candid::<Vec<User>>(&message);

        let mut one = Encode!(&batch.first().cloned().unwrap_or_else(|| User::new(1, "a"))).unwrap();
        let at = position.index(one.len());
        one[at] = byte;
        let _ = agrees_with_candid::<User>(&one);
    }
}
