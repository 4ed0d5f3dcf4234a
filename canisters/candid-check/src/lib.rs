//! Test support for the canister crates: the `.did` file committed beside a canister must be
//! the Candid service its code exports (`ic_cdk::export_candid!`'s `__export_service`). This
//! is the project's one Candid check; `dfx` embeds the committed file in the Wasm's metadata.

/// `Ok` if the Candid `exported` by the code equals the committed file at `did_path`. With
/// the environment variable `UPDATE_CANDID` set, the file is first rewritten from the code
/// (to accept an intended change).
pub fn committed_candid_matches(exported: &str, did_path: &str) -> Result<(), String> {
    if std::env::var_os("UPDATE_CANDID").is_some() {
        std::fs::write(did_path, format!("{}\n", exported.trim()))
            .map_err(|error| format!("writing {did_path}: {error}"))?;
    }
    let committed = std::fs::read_to_string(did_path)
        .map_err(|error| format!("reading {did_path}: {error}"))?;
    if committed.trim() == exported.trim() {
        Ok(())
    } else {
        Err(format!(
            "{did_path} differs from the Candid the code exports; if the change is intended, \
             rerun the test with UPDATE_CANDID=1.\n--- exported:\n{exported}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_different_file_is_reported() {
        let path = std::env::temp_dir().join(format!("candid-check-{}.did", std::process::id()));
        std::fs::write(&path, "service : {}\n").expect("writes");
        let path = path.to_string_lossy().into_owned();
        assert_eq!(committed_candid_matches("service : {}", &path), Ok(()));
        assert!(committed_candid_matches("service : { f : () -> () }", &path).is_err());
        let _ = std::fs::remove_file(&path);
    }
}
