//! A small HTTP/1.1 client over one kept-alive TCP connection: enough to call the edge
//! component and time each request without a connection set-up in the figure.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An answer of the component.
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// A numeric header, 0 when absent or not a number.
    pub fn counter(&self, name: &str) -> u64 {
        self.header(name)
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The body as JSON.
    pub fn json(&self) -> io::Result<serde_json::Value> {
        serde_json::from_slice(&self.body).map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "status {}: not JSON ({error}): {}",
                    self.status,
                    String::from_utf8_lossy(&self.body)
                ),
            )
        })
    }
}

/// One connection to the component, reopened when the server closes it.
pub struct Client {
    address: SocketAddr,
    token: Option<String>,
    connection: Option<BufReader<TcpStream>>,
}

impl Client {
    /// A client of the component at `address`, sending `token` as the bearer credential of
    /// every request when given.
    pub fn new(address: SocketAddr, token: Option<&str>) -> Self {
        Self {
            address,
            token: token.map(str::to_string),
            connection: None,
        }
    }

    /// `GET path`.
    pub fn get(&mut self, path: &str) -> io::Result<Response> {
        self.send("GET", path, &[], None)
    }

    /// `POST path` with a JSON body.
    pub fn post(&mut self, path: &str, body: &serde_json::Value) -> io::Result<Response> {
        let bytes = serde_json::to_vec(body).map_err(io::Error::other)?;
        self.send("POST", path, &[], Some(&bytes))
    }

    /// A request with raw parts: `headers` are sent after the client's own, `body` as is.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> io::Result<Response> {
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: localhost\r\n");
        if let Some(token) = &self.token {
            head.push_str(&format!("authorization: Bearer {token}\r\n"));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let body = body.unwrap_or_default();
        head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        // A kept-alive connection the server closed while idle fails at once, before any
        // byte of an answer: only then is the request sent again, on a new connection (a
        // request that may have been received is never sent twice).
        let reused = self.connection.is_some();
        match self.exchange(head.as_bytes(), body) {
            Err(error) if reused && is_idle_close(&error) => self.exchange(head.as_bytes(), body),
            result => result,
        }
    }

    /// A request sent byte for byte as given (its head and whatever body follows), for the
    /// malformed or lying requests of the tests; like every request, never sent twice.
    pub fn send_raw(&mut self, request: &[u8]) -> io::Result<Response> {
        self.exchange(request, &[])
    }

    fn exchange(&mut self, head: &[u8], body: &[u8]) -> io::Result<Response> {
        let result = self.exchange_on_connection(head, body);
        if result.is_err() {
            self.connection = None;
        }
        result
    }

    fn exchange_on_connection(&mut self, head: &[u8], body: &[u8]) -> io::Result<Response> {
        if self.connection.is_none() {
            let stream = TcpStream::connect_timeout(&self.address, Duration::from_secs(10))?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(Duration::from_secs(120)))?;
            self.connection = Some(BufReader::new(stream));
        }
        let reader = self
            .connection
            .as_mut()
            .ok_or_else(|| io::Error::other("no connection"))?;
        let stream = reader.get_mut();
        stream.write_all(head)?;
        stream.write_all(body)?;
        stream.flush()?;
        let response = read_response(reader)?;
        let closing = response
            .header("connection")
            .is_some_and(|value| value.eq_ignore_ascii_case("close"));
        if closing {
            self.connection = None;
        }
        Ok(response)
    }
}

fn read_response(reader: &mut BufReader<TcpStream>) -> io::Result<Response> {
    let status_line = read_line(reader)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid(format!("bad status line {status_line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid(format!("bad header {line:?}")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if response
        .header("transfer-encoding")
        .is_some_and(|value| value.eq_ignore_ascii_case("chunked"))
    {
        response.body = read_chunked(reader)?;
    } else if let Some(length) = response.header("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| invalid(format!("bad content-length {length:?}")))?;
        response.body = vec![0; length];
        reader.read_exact(&mut response.body)?;
    }
    Ok(response)
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let size_line = read_line(reader)?;
        let size_text = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| invalid(format!("bad chunk size {size_line:?}")))?;
        if size == 0 {
            // Trailers, then the empty line.
            while !read_line(reader)?.is_empty() {}
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        read_line(reader)?;
    }
}

fn read_line(reader: &mut BufReader<TcpStream>) -> io::Result<String> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// Whether `error` is a connection the server had closed before this request.
fn is_idle_close(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
    )
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}
