//! [`WasiFile`]: a [`DiskFile`] on `wasi:filesystem` itself, for `wasm32-wasip2` components.
//!
//! Rust's `std::fs` on WASI goes through wasi-libc, which positions each read with a seek and
//! copies the list a `wasi:filesystem` `descriptor.read` returns into a buffer the caller has
//! zeroed: for every unit a [`FileMemory`](super::FileMemory) reads, its whole length zeroed
//! and copied once more inside the guest (docs/edge.md, "What a request executes"). Here a
//! read is `descriptor.read(length, offset)` (the host returns at most its own read size per
//! call; the loop asks again), whose list the host writes straight into the buffer the unit
//! keeps ([`DiskFile::read_owned`]), and a write hands the host the bytes in place, in pieces
//! of at most [`MAX_WRITE_BYTES`].

use super::disk::DiskFile;
use super::preopen::relative_to;
use std::io;
use std::path::Path;
use wasi::filesystem::preopens::get_directories;
use wasi::filesystem::types::{Descriptor, DescriptorFlags, ErrorCode, OpenFlags, PathFlags};

/// The most bytes one `descriptor.write` hands the host. A host limits what a guest may copy to
/// it in one call (wasmtime's "hostcall fuel", 128 MiB by default, `Store::set_hostcall_fuel`;
/// `wasmtime serve -S hostcall-fuel=N`), and a call past it traps the request: a commit of a
/// large batch, or a checkpoint's run of blocks, is written in pieces of this size instead.
const MAX_WRITE_BYTES: usize = 256 * 1024;

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
        PREOPENS.with(|directories| {
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
                    // As `std::fs` opens: a symbolic link to the data file is followed.
                    PathFlags::SYMLINK_FOLLOW,
                    relative,
                    OpenFlags::CREATE,
                    DescriptorFlags::READ | DescriptorFlags::WRITE,
                )
                .map_err(|code| error(code, None))?;
            Ok(Self { descriptor })
        })
    }
}

thread_local! {
    /// The host's preopened directories, asked once per instance: a [`FileMemory`](super::FileMemory)
    /// opens two files (the data and its journal), and the list does not change while the
    /// instance lives.
    static PREOPENS: Vec<(Descriptor, String)> = get_directories();
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
                .map_err(|code| error(code, Some("reading the file")))?;
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
            let end = data.len().min(written + MAX_WRITE_BYTES);
            let count = self
                .descriptor
                .write(&data[written..end], offset + written as u64)
                .map_err(|code| error(code, Some("writing the file")))?;
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
            .map_err(|code| error(code, Some("reading the file's length")))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.descriptor
            .set_size(len)
            .map_err(|code| error(code, Some("sizing the file")))
    }

    fn sync(&self) -> io::Result<()> {
        self.descriptor
            .sync_data()
            .map_err(|code| error(code, Some("syncing the file")))
    }
}

/// `code` as an [`io::Error`] of the nearest kind, with what was being done (the caller of an
/// open adds its own context).
fn error(code: ErrorCode, doing: Option<&str>) -> io::Error {
    let kind = match code {
        ErrorCode::NoEntry => io::ErrorKind::NotFound,
        ErrorCode::Exist => io::ErrorKind::AlreadyExists,
        ErrorCode::Access | ErrorCode::NotPermitted => io::ErrorKind::PermissionDenied,
        ErrorCode::ReadOnly => io::ErrorKind::ReadOnlyFilesystem,
        ErrorCode::IsDirectory => io::ErrorKind::IsADirectory,
        ErrorCode::NotDirectory => io::ErrorKind::NotADirectory,
        ErrorCode::Invalid => io::ErrorKind::InvalidInput,
        ErrorCode::Interrupted => io::ErrorKind::Interrupted,
        ErrorCode::Unsupported => io::ErrorKind::Unsupported,
        ErrorCode::InsufficientSpace => io::ErrorKind::StorageFull,
        ErrorCode::Quota => io::ErrorKind::QuotaExceeded,
        _ => io::ErrorKind::Other,
    };
    match doing {
        Some(doing) => io::Error::new(kind, format!("{doing}: {code}")),
        None => io::Error::new(kind, code.to_string()),
    }
}
