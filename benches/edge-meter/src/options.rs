//! The command line: the part of `wasmtime serve`'s that the benchmark's launcher
//! (`edge_bench::host`) gives, so that the launcher starts either host alike.

use std::net::SocketAddr;
use std::path::PathBuf;

/// What to serve, where, and with what.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// The component file.
    pub component: PathBuf,
    /// The address to listen on (`--addr`, `wasmtime serve`'s default `0.0.0.0:8080`).
    pub addr: SocketAddr,
    /// Host directories preopened at guest paths (`--dir HOST::GUEST`).
    pub dirs: Vec<(PathBuf, String)>,
    /// The component's environment (`--env NAME=VALUE`).
    pub env: Vec<(String, String)>,
    /// Requests one instance serves (`--max-instance-reuse-count`; 1, a fresh instance per
    /// request, by default, as `wasmtime serve`'s for `wasi:http/proxy@0.2`).
    pub max_instance_reuse_count: usize,
}

impl Options {
    /// Reads `serve [OPTIONS] COMPONENT`. `-S cli` is accepted (the interfaces of
    /// `wasi:cli` are always linked here); any other option is refused by name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut args = args.into_iter();
        if args.next().as_deref() != Some("serve") {
            return Err(
                "usage: edge-meter serve [-S cli] [--dir HOST::GUEST]... [--addr IP:PORT] \
                 [--env NAME=VALUE]... [--max-instance-reuse-count N] COMPONENT"
                    .into(),
            );
        }
        let mut component = None;
        let mut addr = SocketAddr::from(([0, 0, 0, 0], 8080));
        let mut dirs = Vec::new();
        let mut env = Vec::new();
        let mut max_instance_reuse_count = 1;
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
            match arg.as_str() {
                "-S" => {
                    let setting = value("-S")?;
                    if setting != "cli" {
                        return Err(format!("-S {setting}: only -S cli is supported"));
                    }
                }
                "--dir" => {
                    let dir = value("--dir")?;
                    let (host, guest) = dir
                        .split_once("::")
                        .ok_or_else(|| format!("--dir {dir}: expected HOST::GUEST"))?;
                    dirs.push((PathBuf::from(host), guest.to_string()));
                }
                "--addr" => {
                    let text = value("--addr")?;
                    addr = text
                        .parse()
                        .map_err(|_| format!("--addr {text}: not an IP:PORT"))?;
                }
                "--env" => {
                    let pair = value("--env")?;
                    let (name, value) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("--env {pair}: expected NAME=VALUE"))?;
                    env.push((name.to_string(), value.to_string()));
                }
                "--max-instance-reuse-count" => {
                    let text = value("--max-instance-reuse-count")?;
                    max_instance_reuse_count = text
                        .parse::<usize>()
                        .ok()
                        .filter(|count| *count >= 1)
                        .ok_or_else(|| {
                            format!("--max-instance-reuse-count {text}: not a count >= 1")
                        })?;
                }
                flag if flag.starts_with('-') => return Err(format!("unsupported option {flag}")),
                _ if component.is_none() => component = Some(PathBuf::from(arg)),
                _ => return Err(format!("a second component {arg}: one is served")),
            }
        }
        Ok(Options {
            component: component.ok_or("no component given")?,
            addr,
            dirs,
            env,
            max_instance_reuse_count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Options, String> {
        Options::parse(line.split(' ').map(str::to_string))
    }

    #[test]
    fn the_launchers_command_line_is_read_whole() {
        let options = parse(
            "serve -S cli --dir /tmp/d::/data --addr 127.0.0.1:9000 --env A=1 --env B=x=y \
             --max-instance-reuse-count 7 c.wasm",
        );
        assert_eq!(
            options,
            Ok(Options {
                component: PathBuf::from("c.wasm"),
                addr: SocketAddr::from(([127, 0, 0, 1], 9000)),
                dirs: vec![(PathBuf::from("/tmp/d"), "/data".into())],
                env: vec![("A".into(), "1".into()), ("B".into(), "x=y".into())],
                max_instance_reuse_count: 7,
            })
        );
    }

    #[test]
    fn a_fresh_instance_per_request_is_the_default() {
        let options = parse("serve c.wasm").map(|options| options.max_instance_reuse_count);
        assert_eq!(options, Ok(1));
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for (line, said) in [
            ("run c.wasm", "usage"),
            ("serve -S http c.wasm", "-S http"),
            ("serve --dir /tmp c.wasm", "HOST::GUEST"),
            ("serve --env A c.wasm", "NAME=VALUE"),
            ("serve --addr nowhere c.wasm", "--addr nowhere"),
            ("serve --max-instance-reuse-count 0 c.wasm", "count >= 1"),
            ("serve -W fuel=1 c.wasm", "-W"),
            ("serve a.wasm b.wasm", "second component"),
            ("serve", "no component"),
        ] {
            let error = parse(line).expect_err(line);
            assert!(error.contains(said), "{line}: {error}");
        }
    }
}
