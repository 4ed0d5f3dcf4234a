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

/// `Ok` if the Candid services `a` and `b` (two store canisters' `.did` texts) are the same
/// but for the engine's configuration: the same methods and init argument, and the same
/// definition of every type both declare, except `EngineConfig` (each canister's own engine
/// case). The types only one declares are those its configuration alone uses.
pub fn same_service_but_engine_config(a: &str, b: &str) -> Result<(), String> {
    let (a, b) = (definitions(a), definitions(b));
    for (name, definition) in &a {
        if name == "EngineConfig" {
            continue;
        }
        if let Some(other) = b.iter().find(|(other, _)| other == name).map(|(_, d)| d) {
            if other != definition {
                return Err(format!("`{name}` differs:\n{definition}\n---\n{other}"));
            }
        }
    }
    let service = |defs: &[(String, String)]| {
        defs.iter()
            .find(|(name, _)| name == "service")
            .map(|(_, definition)| definition.clone())
    };
    match (service(&a), service(&b)) {
        (Some(a), Some(b)) if a == b => Ok(()),
        (a, b) => Err(format!("the services differ:\n{a:?}\n---\n{b:?}")),
    }
}

/// The definitions of a `.did` text by name (`service` for the service), each with the
/// comment lines before it.
fn definitions(did: &str) -> Vec<(String, String)> {
    let mut definitions = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut comments = String::new();
    for line in did.lines() {
        let name = line
            .strip_prefix("type ")
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .or_else(|| line.starts_with("service").then(|| "service".to_string()));
        if let Some(name) = name {
            definitions.extend(current.take());
            current = Some((name, std::mem::take(&mut comments) + line + "\n"));
        } else if line.starts_with("//") && current.as_ref().is_none_or(|(_, d)| d.ends_with(";\n"))
        {
            definitions.extend(current.take());
            comments.push_str(line);
            comments.push('\n');
        } else if let Some((_, definition)) = current.as_mut() {
            definition.push_str(line);
            definition.push('\n');
        }
    }
    definitions.extend(current);
    definitions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_that_differ_only_in_the_engine_config_agree() {
        let a = "// one\ntype EngineConfig = variant { A : record {} };\ntype User = record { id : nat64 };\nservice : (opt EngineConfig) -> {\n  f : () -> (User);\n}\n";
        let b = "type EngineConfig = variant { B : Conf };\n// conf\ntype Conf = record { x : nat32 };\ntype User = record { id : nat64 };\nservice : (opt EngineConfig) -> {\n  f : () -> (User);\n}\n";
        assert_eq!(same_service_but_engine_config(a, b), Ok(()));
        let other_user = b.replace("id : nat64", "id : nat32");
        assert!(same_service_but_engine_config(a, &other_user).is_err());
        let other_method = b.replace("f : ()", "g : ()");
        assert!(same_service_but_engine_config(a, &other_method).is_err());
    }

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
