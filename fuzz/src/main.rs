//! `fuzz <target> [iterations] [seed]`: runs a fuzz target ([`userstore_fuzz::TARGETS`]) on
//! its corpus and mutations of it; `fuzz <target> --input FILE` replays one input. Exits 1 if
//! an input broke an invariant (written to `fuzz/crashes/`).

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some((name, rest)) = args.split_first() else {
        eprintln!("usage: fuzz <target> [iterations] [seed] | fuzz <target> --input FILE");
        return ExitCode::from(2);
    };
    let Some((_, target)) = userstore_fuzz::TARGETS.iter().find(|(n, _)| n == name) else {
        eprintln!(
            "unknown target {name}: {:?}",
            userstore_fuzz::TARGETS.map(|(n, _)| n)
        );
        return ExitCode::from(2);
    };
    if let [flag, file] = rest {
        if flag == "--input" {
            let Ok(bytes) = std::fs::read(file) else {
                eprintln!("cannot read {file}");
                return ExitCode::from(2);
            };
            target(&bytes);
            println!("{name}: {file} holds");
            return ExitCode::SUCCESS;
        }
    }
    let iterations = rest.first().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let seed = rest.get(1).and_then(|n| n.parse().ok()).unwrap_or(1);
    let outcome = userstore_fuzz::run(root, name, *target, iterations, seed);
    println!(
        "{name}: {} inputs, {} crashes",
        outcome.inputs,
        outcome.crashes.len()
    );
    for crash in &outcome.crashes {
        println!("  {}", crash.display());
    }
    if outcome.crashes.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
