//! Candid text <-> bytes for calls, typed by a service description when one is
//! known (the module's `candid:service` metadata or a `.did` file).

use candid::types::{Type, TypeInner};
use candid::{IDLArgs, TypeEnv};
use candid_parser::utils::CandidSource;

/// Custom sections that may hold a module's Candid service, in the order tried.
pub const SERVICE_SECTIONS: [&str; 2] = ["icp:public candid:service", "icp:private candid:service"];

/// A parsed Candid service description.
pub struct Interface {
    env: TypeEnv,
    actor: Type,
}

impl Interface {
    /// Parses a `.did` text; fails if it is invalid or declares no service.
    pub fn parse(did: &str) -> Result<Interface, String> {
        let (env, actor) = CandidSource::Text(did)
            .load()
            .map_err(|e| format!("invalid Candid interface: {e}"))?;
        let actor = actor.ok_or("the Candid interface declares no service")?;
        Ok(Interface { env, actor })
    }

    /// Argument and result types of `method`, if the service has it.
    fn method<'a>(&'a self, method: &'a str) -> Option<(&'a [Type], &'a [Type])> {
        let function = self.env.get_method(&self.actor, method).ok()?;
        Some((&function.args, &function.rets))
    }

    /// The init argument types, when the service is a class (`service : (A) -> {...}`).
    fn init_args(&self) -> Option<&[Type]> {
        match self.actor.as_ref() {
            TypeInner::Class(args, _) => Some(args),
            _ => None,
        }
    }
}

/// Encodes Candid text arguments such as `(42, "x")`, typed by `types` when given.
pub fn encode(text: &str, env: Option<(&TypeEnv, &[Type])>) -> Result<Vec<u8>, String> {
    let args = candid_parser::parse_idl_args(text)
        .map_err(|e| format!("invalid Candid arguments {text:?}: {e}"))?;
    let bytes = match env {
        Some((env, types)) => args.to_bytes_with_types(env, types),
        None => args.to_bytes(),
    };
    bytes.map_err(|e| format!("cannot encode {text:?}: {e}"))
}

/// Decodes Candid bytes to text, typed by `types` when given.
pub fn decode(bytes: &[u8], env: Option<(&TypeEnv, &[Type])>) -> Result<String, String> {
    let args = match env {
        Some((env, types)) => IDLArgs::from_bytes_with_types(bytes, env, types),
        None => IDLArgs::from_bytes(bytes),
    };
    args.map(|a| a.to_string())
        .map_err(|e| format!("cannot decode the reply as Candid: {e}"))
}

/// Encodes the arguments of a call to `method`, typed by `interface` if known.
pub fn encode_call(
    text: &str,
    interface: Option<&Interface>,
    method: &str,
) -> Result<Vec<u8>, String> {
    match interface.and_then(|i| i.method(method).map(|(args, _)| (&i.env, args))) {
        Some((env, args)) => encode(text, Some((env, args))),
        None => encode(text, None),
    }
}

/// Decodes the reply of `method`, typed by `interface` if known.
pub fn decode_reply(
    bytes: &[u8],
    interface: Option<&Interface>,
    method: &str,
) -> Result<String, String> {
    match interface.and_then(|i| i.method(method).map(|(_, rets)| (&i.env, rets))) {
        Some((env, rets)) => decode(bytes, Some((env, rets))),
        None => decode(bytes, None),
    }
}

/// Encodes an init (or post_upgrade) argument, typed by the service's class
/// arguments if known.
pub fn encode_init(text: &str, interface: Option<&Interface>) -> Result<Vec<u8>, String> {
    match interface.and_then(|i| i.init_args().map(|args| (&i.env, args))) {
        Some((env, args)) => encode(text, Some((env, args))),
        None => encode(text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DID: &str = "service : (record { n : nat64 }) -> { get : (nat64) -> (text) query }";

    #[test]
    fn typed_roundtrip() {
        let interface = Interface::parse(DID).expect("valid did");
        let bytes = encode_call("(5)", Some(&interface), "get").expect("encodes");
        // Typed as nat64, the literal 5 is encoded as 8 bytes.
        assert_eq!(decode(&bytes, None).expect("decodes"), "(5 : nat64)");
        let init = encode_init("(record { n = 1 })", Some(&interface)).expect("encodes");
        assert!(init.starts_with(b"DIDL"));
        let reply = encode("(\"hi\")", None).expect("encodes");
        assert_eq!(
            decode_reply(&reply, Some(&interface), "get").expect("decodes"),
            "(\"hi\")"
        );
    }

    #[test]
    fn bad_text_is_an_error() {
        assert!(encode("(", None).is_err());
        assert!(Interface::parse("service : { ").is_err());
    }
}
