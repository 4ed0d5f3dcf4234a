//! `--breakdown`: where a message's (or a bench's) instructions went, as a table.

use icrun::flamegraph::group_thousands;
use icrun::{Breakdown, PageUse};
use std::fmt::Write;

/// The breakdown as text: the total, the Wasm operators, each system API function, stable
/// memory traffic and every page charge.
pub fn render(breakdown: &Breakdown) -> String {
    let mut text = String::new();
    let mut row = |what: &str, count: String, instructions: u64| {
        let _ = writeln!(
            text,
            "  {what:<40} {count:>14} {:>16}",
            group_thousands(instructions)
        );
    };
    row("total", String::new(), breakdown.instructions);
    row("wasm operators", String::new(), breakdown.operators());
    for (name, use_) in &breakdown.system_api {
        let calls = format!("{} calls", group_thousands(use_.calls));
        row(&format!("ic0.{name}"), calls, use_.instructions);
    }
    let pages: [(&str, PageUse); 6] = [
        ("stable 4 KiB pages dirtied", breakdown.stable_pages_dirtied),
        ("heap 4 KiB pages dirtied", breakdown.heap_pages_dirtied),
        (
            "heap 64 KiB pages accessed",
            breakdown.heap_regions_accessed,
        ),
        ("heap 64 KiB pages written", breakdown.heap_regions_written),
        (
            "stable 64 KiB pages accessed",
            breakdown.stable_regions_accessed,
        ),
        (
            "stable 64 KiB pages written",
            breakdown.stable_regions_written,
        ),
    ];
    for (what, use_) in pages {
        if use_.pages > 0 {
            row(
                what,
                format!("{} pages", group_thousands(use_.pages)),
                use_.instructions,
            );
        }
    }
    let _ = writeln!(
        text,
        "  stable memory: {} bytes read, {} bytes written",
        group_thousands(breakdown.stable_bytes_read),
        group_thousands(breakdown.stable_bytes_written)
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use icrun::ApiUse;

    #[test]
    fn every_part_is_listed() {
        let mut breakdown = Breakdown {
            instructions: 10_000,
            stable_bytes_read: 64,
            ..Breakdown::default()
        };
        breakdown.system_api.insert(
            "msg_reply",
            ApiUse {
                calls: 1,
                instructions: 500,
            },
        );
        breakdown.heap_pages_dirtied = PageUse {
            pages: 2,
            instructions: 2_000,
        };
        let text = render(&breakdown);
        assert!(text.contains("wasm operators"), "{text}");
        assert!(text.contains("7,500"), "{text}");
        assert!(text.contains("ic0.msg_reply"), "{text}");
        assert!(text.contains("heap 4 KiB pages dirtied"), "{text}");
        assert!(!text.contains("stable 64 KiB"), "{text}");
        assert!(text.contains("64 bytes read"), "{text}");
    }
}
