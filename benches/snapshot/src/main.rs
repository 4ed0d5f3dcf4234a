//! Builds the benchmarks' stable-memory image.
//!
//! Installs a bench canister (this crate's engines', or the ic-sqlite-vfs peer's) on icrun
//! with the IC's instruction limits (docs/metering.md §7), asks it which tables it measures
//! (its `seeded_tables` query), fills each through its `seed` update in chunks that each fit
//! one update message, gives each SQLite database its journal file (`prime_journal`), checks each table's row count with the `table_rows` query, and saves
//! stable memory as a raw image (canbench's `stable_memory.file` format).
//!
//! Also writes, as tab-separated `engine rows bytes` lines, the stable memory each table
//! occupies (for the report's bytes per row).
//!
//! Usage: `bench-snapshot <bench.wasm> <image-out> <storage-tsv-out>`

use candid::Principal;
use candid::{Decode, Encode};
use icrun::{Canister, Env};

/// The caller of every seeding message.
const ANONYMOUS: Principal = Principal::anonymous();
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// Rows per `seed` call: 100,000 B-tree rows cost about 6 billion instructions, well under
/// the 40 billion of one update message (docs/metering.md §7).
const ROWS_PER_MESSAGE: u64 = 100_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wasm_path, image_path, storage_path] = args.as_slice() else {
        eprintln!("usage: bench-snapshot <bench.wasm> <image-out> <storage-tsv-out>");
        return ExitCode::from(2);
    };
    match build_image(
        Path::new(wasm_path),
        Path::new(image_path),
        Path::new(storage_path),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench-snapshot: {message}");
            ExitCode::FAILURE
        }
    }
}

fn build_image(wasm_path: &Path, image_path: &Path, storage_path: &Path) -> Result<(), String> {
    let mut storage = String::new();
    let started = Instant::now();
    let wasm = std::fs::read(wasm_path)
        .map_err(|error| format!("reading {}: {error}", wasm_path.display()))?;
    let (mut canister, _) = Canister::install(&wasm, &[], ANONYMOUS, Env::default())
        .map_err(|error| format!("installing {}: {error}", wasm_path.display()))?;
    let reply = canister
        .query(
            "seeded_tables",
            &Encode!().map_err(|e| e.to_string())?,
            ANONYMOUS,
        )
        .reply
        .map_err(|reject| format!("seeded_tables: {reject}"))?;
    let tables = Decode!(&reply, Vec<(String, String, u64)>).map_err(|e| e.to_string())?;
    if tables.is_empty() {
        return Err("the canister seeds no table".into());
    }
    for (engine, table, rows) in &tables {
        let (engine, table, rows) = (engine.as_str(), table.as_str(), *rows);
        let mut most_instructions = 0;
        for from in (0..rows).step_by(ROWS_PER_MESSAGE as usize) {
            let count = ROWS_PER_MESSAGE.min(rows - from);
            let arg = Encode!(&engine, &table, &from, &count).map_err(|e| e.to_string())?;
            let result = canister.update("seed", &arg, ANONYMOUS);
            most_instructions = most_instructions.max(result.instructions);
            let reply = result
                .reply
                .map_err(|reject| format!("seed {engine} {table} from {from}: {reject}"))?;
            let total = Decode!(&reply, Result<u64, String>)
                .map_err(|e| e.to_string())?
                .map_err(|error| format!("seed {engine} {table} from {from}: {error}"))?;
            if total != from + count {
                return Err(format!(
                    "{engine} {table}: {total} rows after seeding up to {}",
                    from + count
                ));
            }
        }
        if engine == "sqlite" {
            let arg = Encode!(&table).map_err(|e| e.to_string())?;
            let reply = canister
                .update("prime_journal", &arg, ANONYMOUS)
                .reply
                .map_err(|reject| format!("prime_journal {table}: {reject}"))?;
            Decode!(&reply, Result<u64, String>)
                .map_err(|e| e.to_string())?
                .map_err(|error| format!("prime_journal {table}: {error}"))?;
        }
        let counted = query_u64(&mut canister, "table_rows", engine, table)?;
        if counted != rows {
            return Err(format!(
                "{engine} {table}: counted {counted} rows, expected {rows}"
            ));
        }
        let bytes = query_u64(&mut canister, "table_bytes", engine, table)?;
        storage.push_str(&format!("{engine}\t{rows}\t{bytes}\n"));
        eprintln!(
            "{engine:>13} {table:>4}: {rows} rows, largest message {most_instructions} instructions ({:.0?} so far)",
            started.elapsed()
        );
    }
    if let Some(parent) = image_path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    canister
        .stable_memory()
        .save_file(image_path)
        .map_err(|error| format!("saving {}: {error}", image_path.display()))?;
    std::fs::write(storage_path, storage)
        .map_err(|error| format!("writing {}: {error}", storage_path.display()))?;
    eprintln!(
        "saved {} ({} bytes of stable memory) in {:.0?}",
        image_path.display(),
        canister.stable_memory().size_bytes(),
        started.elapsed()
    );
    Ok(())
}

/// Calls a `(engine, table) -> Result<nat64, text>` query of the bench canister.
fn query_u64(
    canister: &mut Canister,
    method: &str,
    engine: &str,
    table: &str,
) -> Result<u64, String> {
    let arg = Encode!(&engine, &table).map_err(|e| e.to_string())?;
    let reply = canister
        .query(method, &arg, ANONYMOUS)
        .reply
        .map_err(|reject| format!("{method} {engine} {table}: {reject}"))?;
    Decode!(&reply, Result<u64, String>)
        .map_err(|e| e.to_string())?
        .map_err(|error| format!("{method} {engine} {table}: {error}"))
}
