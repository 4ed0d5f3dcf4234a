//! Which preopened directory holds a path: WASI opens files relative to a directory the host
//! preopened (`--dir host::/data`), by its guest path.

/// `path` relative to the preopened directory whose guest path is `guest`, if it lies in it.
pub(super) fn relative_to<'a>(guest: &str, path: &'a str) -> Option<&'a str> {
    let rest = match guest.trim_end_matches('/') {
        // The root holds every absolute path.
        "" if guest.starts_with('/') => path.strip_prefix('/')?,
        // The current directory holds every relative path.
        "." => {
            if path.starts_with('/') {
                return None;
            }
            path
        }
        prefix => {
            let rest = path.strip_prefix(prefix)?;
            if !rest.is_empty() && !rest.starts_with('/') {
                // `/data2/x` is not in `/data`.
                return None;
            }
            rest
        }
    };
    let relative = rest.trim_start_matches('/').trim_start_matches("./");
    (!relative.is_empty()).then_some(relative)
}

#[cfg(test)]
mod tests {
    use super::relative_to;

    #[test]
    fn a_path_is_opened_relative_to_the_preopen_that_holds_it() {
        for (guest, path, relative) in [
            ("/data", "/data/userstore.db", Some("userstore.db")),
            ("/data/", "/data/userstore.db", Some("userstore.db")),
            ("/data", "/data/sub/t.db", Some("sub/t.db")),
            ("/", "/data/userstore.db", Some("data/userstore.db")),
            (".", "t.db", Some("t.db")),
            (".", "./t.db", Some("t.db")),
            ("/data", "/data2/t.db", None),
            ("/data", "/other/t.db", None),
            ("/data", "/data", None),
            ("/data", "/data/", None),
            (".", "/data/t.db", None),
            ("", "t.db", None),
        ] {
            assert_eq!(relative_to(guest, path), relative, "{guest} {path}");
        }
    }
}
