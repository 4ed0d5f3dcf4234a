//! `wasi-rewire INPUT OUTPUT`: rewires a wasm32-wasip1 canister's WASI imports to
//! ic-wasi-polyfill's functions (see the library's documentation) and writes the result, which
//! imports only `ic0`. Writes nothing when the input cannot be rewired.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: wasi-rewire INPUT.wasm OUTPUT.wasm");
        return ExitCode::from(2);
    };
    match run(input, output) {
        Ok(rewired) => {
            println!("wasi-rewire: {input} -> {output}: {rewired} WASI imports rewired");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("wasi-rewire: {input}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Reads `input`, rewires it and writes `output`; returns how many imports were rewired.
fn run(input: &str, output: &str) -> Result<usize, String> {
    let wasm = std::fs::read(input).map_err(|e| format!("cannot read it: {e}"))?;
    let rewired = wasi_rewire::rewire(&wasm).map_err(|e| e.to_string())?;
    std::fs::write(output, &rewired.wasm).map_err(|e| format!("cannot write {output}: {e}"))?;
    Ok(rewired.imports_rewired)
}
