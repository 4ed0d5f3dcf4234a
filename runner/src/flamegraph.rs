//! Flame graphs of instruction traces: a [`Folded`] trace rendered as SVG with `inferno`, as
//! canbench renders its own (`canbench --instruction-tracing`). Used by `icrun call --trace`,
//! `icrun bench --instruction-tracing` and the project's per-call benchmark, whose SVGs are
//! committed: the output is reproducible byte for byte.

use crate::trace::Folded;
use std::path::Path;

/// Renders `folded` as an SVG flame graph titled `title`. Stacks are merged (a flame graph,
/// not canbench's flame chart in time order), so the picture stays readable for long
/// benches; colors are derived from the function names, so the output is reproducible.
pub fn render(folded: &Folded, title: &str) -> Result<Vec<u8>, String> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.subtitle = Some(format!(
        "{} instructions, by function (icrun trace)",
        group_thousands(folded.total())
    ));
    options.count_name = "instructions".to_string();
    options.deterministic = true;
    let lines = folded.lines();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.lines(), &mut svg)
        .map_err(|error| format!("rendering the flame graph of {title}: {error}"))?;
    Ok(svg)
}

/// Renders `folded` (see [`render`]) into the file `path`.
pub fn write(folded: &Folded, title: &str, path: &Path) -> Result<(), String> {
    let svg = render(folded, title)?;
    std::fs::write(path, svg).map_err(|error| format!("writing {}: {error}", path.display()))
}

/// `1234567` as `1,234,567`.
pub fn group_thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1_000), "1,000");
        assert_eq!(group_thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn the_same_trace_renders_the_same_svg() {
        let mut folded = Folded::default();
        folded.add(vec!["bench".into(), "insert".into()], 700);
        folded.add(vec!["bench".into()], 300);
        let first = render(&folded, "bench").expect("renders");
        assert_eq!(first, render(&folded, "bench").expect("renders"));
        let text = String::from_utf8(first).expect("SVG is text");
        assert!(text.contains("insert"), "{text}");
        assert!(text.contains("1,000 instructions"), "{text}");
    }

    #[test]
    fn the_svg_is_byte_for_byte_what_committed_graphs_were_made_with() {
        // Rendered by icrun-cli's writer before it moved here; the project's flame graphs
        // are committed and diffed in CI, so any change to the output must be deliberate.
        let golden = include_bytes!("../tests/golden/flamegraph.svg");
        let mut folded = Folded::default();
        let stack = |frames: &[&str]| frames.iter().map(|f| f.to_string()).collect();
        folded.add(stack(&["insert_user"]), 1_234);
        folded.add(stack(&["insert_user", "btree::insert"]), 56_789);
        folded.add(stack(&["insert_user", "btree::insert", "memcpy"]), 9_000);
        folded.add(stack(&["insert_user", "<heap pages dirtied>"]), 4_000);
        folded.add(stack(&["insert_user", "candid::decode & <T>"]), 777);
        let svg = render(&folded, "insert_user_1").expect("renders");
        assert!(
            svg == golden,
            "the SVG differs from tests/golden/flamegraph.svg"
        );
    }
}
