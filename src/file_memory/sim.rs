//! A simulated disk for crash tests: files in the heap that remember which writes were
//! synced, fail every operation from a chosen one on (the process dies there), and at a crash
//! keep only the synced state plus a random part of the unsynced writes, some torn at a
//! 512-byte sector. This is how SQLite's own crash tests simulate a power cut
//! (<https://sqlite.org/atomiccommit.html>, "Crash testing"): a kill of the process alone
//! loses nothing the OS already holds, a power cut loses what was not synced.

use super::DiskFile;
use std::cell::RefCell;
use std::io;
use std::rc::Rc;

/// The sector a torn write is cut at.
const SECTOR_BYTES: usize = 512;

/// A disk of named files shared by every [`SimFile`] opened on it.
#[derive(Clone, Default)]
pub struct SimDisk {
    state: Rc<RefCell<DiskState>>,
}

#[derive(Default)]
struct DiskState {
    files: Vec<SimFileState>,
    /// Mutating operations so far (writes, length changes, syncs).
    operations: u64,
    /// From this operation on, every operation fails: the process is dead.
    fail_from: Option<u64>,
}

struct SimFileState {
    name: String,
    /// What reads see.
    current: Vec<u8>,
    /// What survives a power cut for sure.
    durable: Vec<u8>,
    /// Changes since the last sync, in order.
    unsynced: Vec<Change>,
}

#[derive(Clone)]
enum Change {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

/// A file of a [`SimDisk`].
pub struct SimFile {
    disk: SimDisk,
    index: usize,
}

impl SimDisk {
    /// An empty disk.
    pub fn new() -> Self {
        Self::default()
    }

    /// The file named `name`, created empty if it does not exist.
    pub fn open(&self, name: &str) -> SimFile {
        let mut state = self.state.borrow_mut();
        let index = match state.files.iter().position(|file| file.name == name) {
            Some(index) => index,
            None => {
                state.files.push(SimFileState {
                    name: name.to_string(),
                    current: Vec::new(),
                    durable: Vec::new(),
                    unsynced: Vec::new(),
                });
                state.files.len() - 1
            }
        };
        SimFile {
            disk: self.clone(),
            index,
        }
    }

    /// Mutating operations so far: the crash points a test can choose from.
    pub fn operations(&self) -> u64 {
        self.state.borrow().operations
    }

    /// Makes the `operation`th mutating operation from now (0: the next) and every one after
    /// it fail, as if the process died just before it.
    pub fn fail_after(&self, operation: u64) {
        let mut state = self.state.borrow_mut();
        state.fail_from = Some(state.operations + operation);
    }

    /// A kill of the process: the OS keeps every write, synced or not. Operations work again.
    pub fn kill(&self) {
        let mut state = self.state.borrow_mut();
        state.fail_from = None;
        for file in &mut state.files {
            file.durable = file.current.clone();
            file.unsynced.clear();
        }
    }

    /// A power cut: each file keeps what was synced and, of its unsynced changes in order,
    /// each one with probability 1/2, a kept write possibly torn to a random subset of its
    /// sectors. `seed` chooses. Operations work again.
    pub fn power_cut(&self, seed: u64) {
        let mut random = XorShift::new(seed);
        let mut state = self.state.borrow_mut();
        state.fail_from = None;
        for file in &mut state.files {
            let mut survived = file.durable.clone();
            for change in file.unsynced.drain(..) {
                if random.next_u64().is_multiple_of(2) {
                    continue;
                }
                match change {
                    Change::SetLen(len) => survived.resize(len as usize, 0),
                    Change::Write { offset, data } => {
                        let torn = random.next_u64().is_multiple_of(4);
                        for (sector, bytes) in data.chunks(SECTOR_BYTES).enumerate() {
                            if torn && random.next_u64().is_multiple_of(2) {
                                continue;
                            }
                            let at = offset as usize + sector * SECTOR_BYTES;
                            write_into(&mut survived, at, bytes);
                        }
                    }
                }
            }
            file.durable = survived.clone();
            file.current = survived;
        }
    }
}

impl SimFile {
    fn mutate(&self, change: Option<Change>) -> io::Result<()> {
        let mut state = self.disk.state.borrow_mut();
        if state.fail_from.is_some_and(|from| state.operations >= from) {
            return Err(io::Error::other("simulated crash: the process is dead"));
        }
        state.operations += 1;
        let file = &mut state.files[self.index];
        match change {
            None => {
                file.durable = file.current.clone();
                file.unsynced.clear();
            }
            Some(change) => {
                match &change {
                    Change::SetLen(len) => file.current.resize(*len as usize, 0),
                    Change::Write { offset, data } => {
                        write_into(&mut file.current, *offset as usize, data)
                    }
                }
                file.unsynced.push(change);
            }
        }
        Ok(())
    }
}

impl DiskFile for SimFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let state = self.disk.state.borrow();
        let current = &state.files[self.index].current;
        let start = (offset as usize).min(current.len());
        let available = (current.len() - start).min(buf.len());
        buf[..available].copy_from_slice(&current[start..start + available]);
        buf[available..].fill(0);
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.mutate(Some(Change::Write {
            offset,
            data: data.to_vec(),
        }))
    }

    fn byte_len(&self) -> io::Result<u64> {
        Ok(self.disk.state.borrow().files[self.index].current.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.mutate(Some(Change::SetLen(len)))
    }

    fn sync(&self) -> io::Result<()> {
        self.mutate(None)
    }
}

fn write_into(file: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if file.len() < at + bytes.len() {
        file.resize(at + bytes.len(), 0);
    }
    file[at..at + bytes.len()].copy_from_slice(bytes);
}

/// A small deterministic generator (xorshift64*), so a failing seed replays.
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (any value; 0 is mapped to a fixed non-zero state).
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
