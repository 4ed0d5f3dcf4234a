//! Marks a build whose end-to-end tests run on PocketIC (`POCKET_IC_BIN` set): the tests that
//! need what only icrun offers are then ignored, with their reason, where the test runner
//! lists them.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pocket_ic)");
    println!("cargo::rerun-if-env-changed=POCKET_IC_BIN");
    if std::env::var_os("POCKET_IC_BIN").is_some() {
        // Set by cargo for the package's features; without the backend the tests could not
        // run where POCKET_IC_BIN says they must.
        if std::env::var_os("CARGO_FEATURE_POCKET_IC").is_none() {
            panic!(
                "POCKET_IC_BIN is set, but the end-to-end tests are built without their PocketIC \
                 backend: build them with --features userstore-e2e/pocket-ic (scripts/test.sh \
                 does when POCKET_IC_BIN is set)"
            );
        }
        println!("cargo::rustc-cfg=pocket_ic");
    }
}
