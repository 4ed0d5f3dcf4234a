//! The real edge host: `wasmtime serve` running the component with a data directory
//! preopened as `/data`, started on a free loopback port and killed when dropped; or, with the
//! same command line, the metering host `edge-meter` (benches/edge-meter).

use std::io::{self, BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a host may take to compile the component and listen.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Starts tried before giving up on finding a free port.
const START_ATTEMPTS: usize = 5;

/// What a host runs and with what.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// The host binary: `wasmtime` (wasmtime-cli), or the metering host `edge-meter`, which
    /// takes the same command line.
    pub program: PathBuf,
    /// The component (`target/edge/userstore-edge.wasm`).
    pub component: PathBuf,
    /// The host directory preopened as `/data`.
    pub data_dir: PathBuf,
    /// Environment given to the component (`--env NAME=VALUE`).
    pub env: Vec<(String, String)>,
    /// Further `wasmtime serve` options (for example `--max-instance-reuse-count`).
    pub serve_args: Vec<String>,
}

impl HostConfig {
    /// The `wasmtime` binary: `WASMTIME_BIN`, else `wasmtime` on the `PATH`, else
    /// `~/.cargo/bin/wasmtime` (where scripts/bench.sh installs the released CLI), else the
    /// workspace's own build of `wasmtime serve`, `target/debug/wasmtime-serve`
    /// (benches/wasmtime-serve, which scripts/test.sh builds and names in `WASMTIME_BIN`).
    pub fn wasmtime_binary() -> Result<PathBuf, String> {
        if let Some(path) = std::env::var_os("WASMTIME_BIN") {
            return Ok(PathBuf::from(path));
        }
        let on_path = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("wasmtime"))
                .find(|candidate| candidate.is_file())
        });
        let in_cargo = std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".cargo/bin/wasmtime"))
            .filter(|candidate| candidate.is_file());
        let in_workspace = Some(repository_root().join("target/debug/wasmtime-serve"))
            .filter(|candidate| candidate.is_file());
        on_path.or(in_cargo).or(in_workspace).ok_or_else(|| {
            "no wasmtime: build the workspace's (cargo build -p wasmtime-serve), install \
             wasmtime-cli 48.0.8 (cargo install wasmtime-cli), or set WASMTIME_BIN"
                .to_string()
        })
    }

    /// The metering host (benches/edge-meter): `EDGE_METER_BIN`, else the workspace's
    /// debug build, which `scripts/bench.sh` makes.
    pub fn meter_binary() -> Result<PathBuf, String> {
        let path = std::env::var_os("EDGE_METER_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| repository_root().join("target/debug/edge-meter"));
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} is missing: build it with cargo build -p edge-meter, or set EDGE_METER_BIN",
                path.display()
            ))
        }
    }
}

/// A running host (`wasmtime serve`, or `edge-meter serve`).
pub struct Host {
    child: Child,
    program: PathBuf,
    address: SocketAddr,
    epoch: String,
}

impl Host {
    /// Starts the host and waits until it accepts connections. Each start gets a new host
    /// epoch (`USERSTORE_HOST_EPOCH`): the component treats lock files of another epoch as
    /// left by a killed host.
    pub fn start(config: &HostConfig) -> io::Result<Host> {
        // A free port can be taken by another host between the probe and the bind (tests run
        // in parallel): such a host exits, and the start is tried again on another port.
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            match Self::start_on(config, free_port()?) {
                Ok(host) => return Ok(host),
                Err(error) if error.kind() == io::ErrorKind::AddrInUse => last_error = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("no free port")))
    }

    fn start_on(config: &HostConfig, port: u16) -> io::Result<Host> {
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let epoch = format!(
            "{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|since| since.as_nanos())
                .unwrap_or_default()
        );
        let mut command = Command::new(&config.program);
        command
            .arg("serve")
            .args(["-S", "cli"])
            .arg("--dir")
            .arg(format!("{}::/data", config.data_dir.display()))
            .arg("--addr")
            .arg(address.to_string())
            .arg("--env")
            .arg(format!("USERSTORE_HOST_EPOCH={epoch}"));
        for (name, value) in &config.env {
            command.arg("--env").arg(format!("{name}={value}"));
        }
        command
            .args(&config.serve_args)
            .arg(&config.component)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("starting {}: {error}", config.program.display()),
            )
        })?;
        let listening = forward_stderr(&mut child);
        let mut host = Host {
            child,
            program: config.program.clone(),
            address,
            epoch,
        };
        host.wait_until_listening(&listening)?;
        Ok(host)
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// This start's epoch.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The host's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `SIGKILL`: the host dies at once, mid-request if one is running.
    pub fn kill(mut self) -> io::Result<()> {
        self.child.kill()?;
        self.child.wait().map(|_| ())
    }

    /// Waits for the host's own "Serving HTTP" line (a connection alone could reach another
    /// host on the same port), then for a connection.
    fn wait_until_listening(&mut self, listening: &Receiver<()>) -> io::Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "the host ({}) exited before listening: {status}",
                        self.program.display()
                    ),
                ));
            }
            if listening.try_recv().is_ok()
                && TcpStream::connect_timeout(&self.address, Duration::from_millis(200)).is_ok()
            {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the host did not listen in time",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Copies the host's standard error to ours, line by line, and signals its "Serving HTTP"
/// line, which it prints once its own socket is bound.
fn forward_stderr(child: &mut Child) -> Receiver<()> {
    let (sender, receiver) = mpsc::channel();
    if let Some(stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.starts_with("Serving HTTP on") {
                    let _ = sender.send(());
                } else {
                    eprintln!("{line}");
                }
            }
        });
    }
    receiver
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nobody listens on now.
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// The repository's root (this crate is `benches/edge`).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A component as the scripts leave it: `target/edge/<name>.wasm`.
pub fn component_path(name: &str) -> PathBuf {
    repository_root()
        .join("target/edge")
        .join(format!("{name}.wasm"))
}
