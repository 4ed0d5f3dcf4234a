//! [`WasiFile`]: a [`DiskFile`] on `wasi:filesystem` itself, for `wasm32-wasip2` components.
//!
//! Rust's `std::fs` on WASI goes through wasi-libc, which reads a `wasi:filesystem`
//! `descriptor.read` result into a buffer the caller has zeroed, one byte copy and one zeroing
//! in the guest's own instructions per byte read, and positions each read with a seek. A
//! [`FileMemory`](super::FileMemory) reads whole 64 KiB units, so on a fresh instance per
//! request those copies were most of a one-row request's Wasm instructions (the edge
//! benchmark's `instructions_per_request`, counted by `edge-meter`). Here a read is one
//! `descriptor.read(length, offset)` whose list the host writes straight into the buffer the
//! unit keeps ([`DiskFile::read_owned`]), and a write hands the host the bytes in place.

use super::disk::DiskFile;
use super::preopen::relative_to;
use std::io;
use std::path::Path;
use wasi::filesystem::preopens::get_directories;
use wasi::filesystem::types::{Descriptor, DescriptorFlags, ErrorCode, OpenFlags, PathFlags};

/// A file opened through the preopened directory that holds it.
pub struct WasiFile {
    descriptor: Descriptor,
}

impl WasiFile {
    /// Opens `path` for reading and writing, creating it if it does not exist. The path must
    /// lie in a directory the host preopened (`--dir host::/data`).
    pub fn open(path: &Path) -> io::Result<Self> {
        let path = path
            .to_str()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path is not UTF-8"))?;
        let directories = get_directories();
        let (directory, relative) = directories
            .iter()
            .filter_map(|(directory, guest)| Some((directory, relative_to(guest, path)?)))
            .max_by_key(|(_, relative)| std::cmp::Reverse(relative.len()))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{path} is in no preopened directory"),
                )
            })?;
        let descriptor = directory
            .open_at(
                PathFlags::empty(),
                relative,
                OpenFlags::CREATE,
                DescriptorFlags::READ | DescriptorFlags::WRITE,
            )
            .map_err(|code| error(code, "opening", path))?;
        Ok(Self { descriptor })
    }
}

impl DiskFile for WasiFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let data = self.read_owned(offset, buf.len())?;
        buf.copy_from_slice(&data);
        Ok(())
    }

    fn read_owned(&self, offset: u64, length: usize) -> io::Result<Box<[u8]>> {
        let mut data: Vec<u8> = Vec::new();
        while data.len() < length {
            let (chunk, end_of_file) = self
                .descriptor
                .read((length - data.len()) as u64, offset + data.len() as u64)
                .map_err(|code| error(code, "reading", "the file"))?;
            let got = chunk.len();
            if data.is_empty() {
                // Usually the whole request in one read: the host's list is kept as it is.
                data = chunk;
            } else {
                data.extend_from_slice(&chunk);
            }
            if got == 0 || end_of_file {
                break;
            }
        }
        // Past the end of the file: zeros, as in a memory grown but not yet written.
        data.resize(length, 0);
        Ok(data.into_boxed_slice())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut written = 0;
        while written < data.len() {
            let count = self
                .descriptor
                .write(&data[written..], offset + written as u64)
                .map_err(|code| error(code, "writing", "the file"))?;
            if count == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the file took no bytes",
                ));
            }
            written += count as usize;
        }
        Ok(())
    }

    fn byte_len(&self) -> io::Result<u64> {
        self.descriptor
            .stat()
            .map(|stat| stat.size)
            .map_err(|code| error(code, "reading the length of", "the file"))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.descriptor
            .set_size(len)
            .map_err(|code| error(code, "sizing", "the file"))
    }

    fn sync(&self) -> io::Result<()> {
        self.descriptor
            .sync_data()
            .map_err(|code| error(code, "syncing", "the file"))
    }
}

fn error(code: ErrorCode, doing: &str, what: &str) -> io::Error {
    let kind = match code {
        ErrorCode::NoEntry => io::ErrorKind::NotFound,
        ErrorCode::Access | ErrorCode::NotPermitted | ErrorCode::ReadOnly => {
            io::ErrorKind::PermissionDenied
        }
        ErrorCode::Unsupported => io::ErrorKind::Unsupported,
        ErrorCode::InsufficientSpace => io::ErrorKind::StorageFull,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{doing} {what}: {code:?}"))
}
