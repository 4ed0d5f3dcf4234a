//! Terminal colours of the report, as canbench shows them: bench names bold,
//! "(new)" blue, regressions red, improvements green. Plain text when the
//! output is not a terminal or `NO_COLOR` is set.

use std::io::IsTerminal;

/// Whether to emit ANSI colour codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    colour: bool,
}

impl Style {
    /// No colours (files, pipes, tests).
    pub fn plain() -> Style {
        Style { colour: false }
    }

    /// Colours when stdout is a terminal, unless `NO_COLOR` is set;
    /// `CLICOLOR_FORCE` forces them.
    pub fn for_stdout() -> Style {
        let forced = std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| v != "0");
        let disabled = std::env::var_os("NO_COLOR").is_some();
        Style {
            colour: forced || (!disabled && std::io::stdout().is_terminal()),
        }
    }

    fn paint(&self, codes: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{codes}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Bold text.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Bold blue text (new benches).
    pub fn new_marker(&self, text: &str) -> String {
        self.paint("1;34", text)
    }

    /// Bold red text (regressions).
    pub fn regressed(&self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// Bold green text (improvements).
    pub fn improved(&self, text: &str) -> String {
        self.paint("1;32", text)
    }
}
