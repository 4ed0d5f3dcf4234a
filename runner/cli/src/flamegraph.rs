//! Where `icrun bench --instruction-tracing` writes its flame graphs (rendered by
//! [`icrun::flamegraph`], as canbench renders its own).

use std::path::{Path, PathBuf};

/// Where canbench puts the flame graph of bench `bench`: `<bench>.svg` beside the results
/// file.
pub fn bench_svg_path(results_path: &Path, bench: &str) -> PathBuf {
    results_path.with_file_name(format!("{bench}.svg"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_the_results_file() {
        let path = bench_svg_path(Path::new("dir/canbench_results.yml"), "insert_1");
        assert_eq!(path, PathBuf::from("dir/insert_1.svg"));
    }
}
