//! The file operations [`FileMemory`](super::FileMemory) needs, behind a trait, so that the
//! same commit runs on a real file ([`StdFile`]) and on a simulated disk that loses unsynced
//! writes ([`super::sim`]).

use std::fs::File;
use std::io;

/// One file, addressed by byte offset. Every method takes `&self`: a file handle is shared by
/// the reads of a request and its commit.
pub trait DiskFile {
    /// Fills `buf` from `offset`. Bytes past the end of the file read as zeros.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// `length` bytes from `offset` in a buffer of their own (zeros past the end of the file).
    /// A file that can read into a fresh buffer without zeroing it first overrides this
    /// (`WasiFile`, on `wasm32-wasip2`).
    fn read_owned(&self, offset: u64, length: usize) -> io::Result<Box<[u8]>> {
        let mut data = vec![0; length].into_boxed_slice();
        self.read_at(offset, &mut data)?;
        Ok(data)
    }

    /// Writes `data` at `offset`, extending the file if needed. Not durable until
    /// [`DiskFile::sync`].
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;

    /// The file's length in bytes.
    fn byte_len(&self) -> io::Result<u64>;

    /// Truncates or extends (with zeros) the file to `len` bytes. Not durable until
    /// [`DiskFile::sync`].
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Makes every earlier write and length change of this file durable (`fdatasync`, WASI's
    /// `sync-data`): the order in which the commit calls it is what makes it atomic.
    fn sync(&self) -> io::Result<()>;
}

/// A [`DiskFile`] on a file of the host's file system (a preopened directory under WASI).
pub struct StdFile {
    file: File,
}

impl StdFile {
    /// Wraps an open file (read and write).
    pub fn new(file: File) -> Self {
        Self { file }
    }
}

impl DiskFile for StdFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut filled = 0;
        while filled < buf.len() {
            let read = positioned::read(&self.file, offset + filled as u64, &mut buf[filled..])?;
            if read == 0 {
                // Past the end of the file: zeros, as in a memory grown but not yet written.
                buf[filled..].fill(0);
                break;
            }
            filled += read;
        }
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut written = 0;
        while written < data.len() {
            let count = positioned::write(&self.file, offset + written as u64, &data[written..])?;
            if count == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the file took no bytes",
                ));
            }
            written += count;
        }
        Ok(())
    }

    fn byte_len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// Reads and writes at an offset: one `pread`/`pwrite` on Unix; a seek and a read or write
/// elsewhere (WASI's positioned calls are not stable in Rust's std). A [`StdFile`] is used by
/// one request at a time, so the seek and the call that follows it are not interleaved.
mod positioned {
    use std::fs::File;
    use std::io;

    #[cfg(unix)]
    pub fn read(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }

    #[cfg(unix)]
    pub fn write(file: &File, offset: u64, data: &[u8]) -> io::Result<usize> {
        std::os::unix::fs::FileExt::write_at(file, data, offset)
    }

    #[cfg(not(unix))]
    pub fn read(mut file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        use std::io::{Read, Seek, SeekFrom};
        file.seek(SeekFrom::Start(offset))?;
        file.read(buf)
    }

    #[cfg(not(unix))]
    pub fn write(mut file: &File, offset: u64, data: &[u8]) -> io::Result<usize> {
        use std::io::{Seek, SeekFrom, Write};
        file.seek(SeekFrom::Start(offset))?;
        file.write(data)
    }
}
