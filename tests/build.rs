//! Marks a build whose end-to-end tests run on PocketIC (`POCKET_IC_BIN` set): the tests that
//! need what only icrun offers are then ignored, with their reason, where the test runner
//! lists them.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pocket_ic)");
    println!("cargo::rerun-if-env-changed=POCKET_IC_BIN");
    if std::env::var_os("POCKET_IC_BIN").is_some() {
        println!("cargo::rustc-cfg=pocket_ic");
    }
}
