//! The earlier format's redo journal, read at open to complete a commit it left half applied
//! (the write-ahead log, [`super::log`], replaced it). It held one commit: the memory's new
//! size and every 4 KiB block the request changed, with a checksum over all of it, written
//! and synced before the data file was touched.
//!
//! ```text
//! 0   magic  "USJRNL" 0 1       8 bytes
//! 8   size of the memory after the commit, in bytes         u64 LE
//! 16  number of blocks                                      u64 LE
//! 24  checksum of bytes 0..24 and of every record           u64 LE
//! 32  records: block number (u64 LE), then the block's 4,096 bytes
//! ```
//! A journal is complete when its length covers every record and its checksum matches;
//! anything else (a torn write, a journal never synced) is discarded at open: that commit
//! never happened, and the data file was not touched by it. Replaying a complete journal
//! twice writes the same bytes twice, so a crash during recovery is harmless.

use super::log::{decode_blocks, le_u64, BLOCK_RECORD_BYTES as RECORD_BYTES};
use super::BLOCK_BYTES;

const MAGIC: [u8; 8] = *b"USJRNL\0\x01";
const HEADER_BYTES: usize = 32;

/// One commit's changes, as written to and read from the journal.
#[derive(Debug, PartialEq, Eq)]
pub struct Journal {
    /// The memory's size after the commit, in bytes.
    pub size_bytes: u64,
    /// The changed blocks, by block number, in ascending order.
    pub blocks: Vec<(u64, Box<[u8; BLOCK_BYTES]>)>,
}

/// What the journal file holds at open.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Nothing: no commit was under way.
    Empty,
    /// A complete journal: a commit that was made durable but perhaps not applied.
    Complete(Journal),
    /// Bytes that are not a complete journal (a torn or unsynced write): discarded.
    Torn,
}

/// Whether `start`, a file's first bytes, is this journal's (a complete one or a torn one).
pub fn is_journal(start: &[u8]) -> bool {
    start.starts_with(&MAGIC)
}

#[cfg(test)]
/// The journal file's bytes for a commit of `blocks` that leaves the memory `size_bytes` long.
pub fn encode<'a>(
    size_bytes: u64,
    blocks: impl ExactSizeIterator<Item = (u64, &'a [u8; BLOCK_BYTES])>,
) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER_BYTES + blocks.len() * RECORD_BYTES);
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&size_bytes.to_le_bytes());
    bytes.extend_from_slice(&(blocks.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    for (block, data) in blocks {
        bytes.extend_from_slice(&block.to_le_bytes());
        bytes.extend_from_slice(data);
    }
    let checksum = checksum(&bytes);
    bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
    bytes
}

/// Reads a journal file's bytes (`bytes`, all of them).
pub fn decode(bytes: &[u8]) -> Found {
    if bytes.is_empty() {
        return Found::Empty;
    }
    if bytes.len() < HEADER_BYTES || bytes[..8] != MAGIC {
        return Found::Torn;
    }
    let size_bytes = le_u64(&bytes[8..16]);
    let count = le_u64(&bytes[16..24]);
    let stored_checksum = le_u64(&bytes[24..32]);
    let Some(length) = usize::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(RECORD_BYTES))
        .and_then(|records| records.checked_add(HEADER_BYTES))
    else {
        return Found::Torn;
    };
    // A longer file is a shorter journal written over an older, longer one whose truncation
    // was not made durable: the checksum decides over the journal's own length only.
    if bytes.len() < length {
        return Found::Torn;
    }
    let mut journal_bytes = bytes[..length].to_vec();
    journal_bytes[24..32].fill(0);
    if checksum(&journal_bytes) != stored_checksum {
        return Found::Torn;
    }
    let blocks = decode_blocks(&bytes[HEADER_BYTES..length]);
    Found::Complete(Journal { size_bytes, blocks })
}

/// FNV-1a over 64 bits, mixed with the length: it tells a torn or partly written journal
/// from a complete one (it is not meant to resist a forger: the file is the host's own).
fn checksum(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = bytes.iter().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    });
    hash ^ (bytes.len() as u64).rotate_left(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(fill: u8) -> Box<[u8; BLOCK_BYTES]> {
        Box::new([fill; BLOCK_BYTES])
    }

    #[test]
    fn a_journal_reads_back_as_written() {
        let blocks = [(3, block(7)), (9, block(1))];
        let bytes = encode(1 << 16, blocks.iter().map(|(no, data)| (*no, &**data)));
        let Found::Complete(journal) = decode(&bytes) else {
            panic!("a complete journal was not read back");
        };
        assert_eq!(journal.size_bytes, 1 << 16);
        assert_eq!(journal.blocks, blocks.to_vec());
    }

    #[test]
    fn every_cut_and_every_flipped_byte_is_torn() {
        let blocks = [(0, block(0xAA))];
        let bytes = encode(1 << 16, blocks.iter().map(|(no, data)| (*no, &**data)));
        for cut in 1..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), Found::Torn, "cut at {cut}");
        }
        for position in (0..bytes.len()).step_by(97) {
            let mut flipped = bytes.clone();
            flipped[position] ^= 0x10;
            assert_eq!(decode(&flipped), Found::Torn, "byte {position} flipped");
        }
        assert_eq!(decode(&[]), Found::Empty);
    }

    #[test]
    fn trailing_bytes_of_an_older_journal_are_ignored() {
        let long = encode(1 << 17, [(1, &*block(1)), (2, &*block(2))].into_iter());
        let short = encode(1 << 16, [(5, &*block(5))].into_iter());
        let mut on_disk = long.clone();
        on_disk[..short.len()].copy_from_slice(&short);
        let Found::Complete(journal) = decode(&on_disk) else {
            panic!("the shorter journal was not read");
        };
        assert_eq!(journal.blocks, vec![(5, block(5))]);
    }
}
