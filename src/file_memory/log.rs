//! The write-ahead log of a [`FileMemory`](super::FileMemory): commits appended to one of two
//! log files, each made durable by one sync, and copied into the data file at a checkpoint.
//!
//! ```text
//! header, at 0 (32 bytes)
//! 0   magic "USLOG" 0 0 1                                   8 bytes
//! 8   generation                                            u64 LE
//! 16  zero                                                  u64 LE
//! 24  checksum of bytes 0..24                               u64 LE
//! one record per commit, from 32 on
//! 0   size of the memory after the commit, in bytes         u64 LE
//! 8   number of blocks                                      u64 LE
//! 16  generation (the header's)                             u64 LE
//! 24  checksum: of the previous record's checksum (the header's for the first) and of
//!     this record's bytes, these 8 read as zero             u64 LE
//! 32  blocks: block number (u64 LE), then the block's 4,096 bytes
//! ```
//!
//! A generation lives in log file `generation % 2`; the current one is the higher of the two
//! headers that are valid. A record belongs to the log while its generation is the header's and
//! its checksum, chained from the one before, matches: the scan stops at the first that does
//! not (a torn or unsynced append, or bytes of an older generation whose truncation was lost).
//! Why two files: a new generation is written only after the data file holds the previous one,
//! synced, and never over it; after a power cut the previous generation is either current
//! (then replaying it rewrites what the file already holds) or superseded by a durable header,
//! so a torn start of a generation can never replay a prefix of an older one over newer data.

use super::BLOCK_BYTES;

const MAGIC: [u8; 8] = *b"USLOG\0\0\x01";
/// Bytes of the header, and of a record before its blocks.
pub const HEADER_BYTES: usize = 32;
/// Bytes of one block in a record (its number, then its bytes): the earlier format's journal
/// lays blocks out the same way.
pub const BLOCK_RECORD_BYTES: usize = 8 + BLOCK_BYTES;

/// A log file's valid header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The generation the file holds.
    pub generation: u64,
    /// The checksum the first record chains from.
    pub checksum: u64,
}

/// One commit read back from a log.
#[derive(Debug, PartialEq, Eq)]
pub struct Record {
    /// The memory's size after the commit, in bytes.
    pub size_bytes: u64,
    /// The blocks the commit changed, by block number.
    pub blocks: Vec<(u64, Box<[u8; BLOCK_BYTES]>)>,
}

/// The valid part of a log: its records, where the next one goes, and what it chains from.
#[derive(Debug, PartialEq, Eq)]
pub struct Scan {
    /// The records, oldest first.
    pub records: Vec<Record>,
    /// The offset just past the last valid record.
    pub end: u64,
    /// The checksum the next record chains from.
    pub checksum: u64,
}

/// The header of `generation`'s log file.
pub fn header(generation: u64) -> ([u8; HEADER_BYTES], Header) {
    let mut bytes = [0u8; HEADER_BYTES];
    bytes[..8].copy_from_slice(&MAGIC);
    bytes[8..16].copy_from_slice(&generation.to_le_bytes());
    let checksum = checksum(0, &bytes[..24], &[]);
    bytes[24..].copy_from_slice(&checksum.to_le_bytes());
    (
        bytes,
        Header {
            generation,
            checksum,
        },
    )
}

/// The header at the start of `bytes`, if it is a valid one.
pub fn read_header(bytes: &[u8]) -> Option<Header> {
    if bytes.len() < HEADER_BYTES || bytes[..8] != MAGIC {
        return None;
    }
    let checksum = le_u64(&bytes[24..32]);
    (self::checksum(0, &bytes[..24], &[]) == checksum).then(|| Header {
        generation: le_u64(&bytes[8..16]),
        checksum,
    })
}

/// A record of a commit of `blocks` that leaves the memory `size_bytes` long, in the log of
/// `generation`, chained from `previous`; and its checksum, which the next record chains from.
pub fn encode_record<'a>(
    previous: u64,
    generation: u64,
    size_bytes: u64,
    blocks: impl ExactSizeIterator<Item = (u64, &'a [u8; BLOCK_BYTES])>,
) -> (Vec<u8>, u64) {
    let mut bytes = Vec::with_capacity(HEADER_BYTES + blocks.len() * BLOCK_RECORD_BYTES);
    bytes.extend_from_slice(&size_bytes.to_le_bytes());
    bytes.extend_from_slice(&(blocks.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&generation.to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    for (block, data) in blocks {
        bytes.extend_from_slice(&block.to_le_bytes());
        bytes.extend_from_slice(data);
    }
    let checksum = checksum(previous, &bytes[..HEADER_BYTES], &bytes[HEADER_BYTES..]);
    bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
    (bytes, checksum)
}

/// The valid records of a log file whose bytes are `bytes` (all of them) and whose valid
/// header is `header`.
pub fn scan(bytes: &[u8], header: Header) -> Scan {
    let mut records = Vec::new();
    let mut at = HEADER_BYTES;
    let mut previous = header.checksum;
    while let Some((record, length, checksum)) = record_at(bytes, at, header.generation, previous) {
        records.push(record);
        at += length;
        previous = checksum;
    }
    Scan {
        records,
        end: at as u64,
        checksum: previous,
    }
}

/// The record at `at`, its length and its checksum, if a valid one of `generation` chained
/// from `previous` is there.
fn record_at(
    bytes: &[u8],
    at: usize,
    generation: u64,
    previous: u64,
) -> Option<(Record, usize, u64)> {
    let head = bytes.get(at..at.checked_add(HEADER_BYTES)?)?;
    if le_u64(&head[16..24]) != generation {
        return None;
    }
    let length = usize::try_from(le_u64(&head[8..16]))
        .ok()?
        .checked_mul(BLOCK_RECORD_BYTES)?
        .checked_add(HEADER_BYTES)?;
    let blocks = bytes.get(at + HEADER_BYTES..at.checked_add(length)?)?;
    let stored = le_u64(&head[24..32]);
    // The checksum was taken with its own 8 bytes read as zero.
    let mut zeroed = [0u8; HEADER_BYTES];
    zeroed.copy_from_slice(head);
    zeroed[24..32].fill(0);
    if checksum(previous, &zeroed, blocks) != stored {
        return None;
    }
    let record = Record {
        size_bytes: le_u64(&head[..8]),
        blocks: decode_blocks(blocks),
    };
    Some((record, length, stored))
}

/// Blocks laid out as [`BLOCK_RECORD_BYTES`] each: the number, then the bytes.
pub fn decode_blocks(entries: &[u8]) -> Vec<(u64, Box<[u8; BLOCK_BYTES]>)> {
    entries
        .chunks_exact(BLOCK_RECORD_BYTES)
        .map(|entry| {
            let mut data = Box::new([0u8; BLOCK_BYTES]);
            data.copy_from_slice(&entry[8..]);
            (le_u64(&entry[..8]), data)
        })
        .collect()
}

/// The little-endian `u64` in the first 8 bytes of `bytes`.
pub fn le_u64(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

/// A checksum of `bytes` continuing from `seed`, eight bytes at a step (a multiply and a
/// rotation each, so that every bit of a word reaches every bit of the sum within a few
/// steps), mixed with the length. It tells a torn, stale or partly written record from a
/// complete one; it is not meant to resist a forger (the files are the host's own). Eight
/// bytes a step because every open checks the whole log.
///
/// The bytes are `head` then `rest`, taken in two parts so that a record is checked where it
/// lies, without a copy; `head` is a whole number of 8-byte words (a header, or its first
/// 24 bytes), so the sum is that of the two parts laid end to end.
fn checksum(seed: u64, head: &[u8], rest: &[u8]) -> u64 {
    const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
    let step = |sum: u64, word: u64| (sum.rotate_left(23) ^ word).wrapping_mul(MULTIPLIER);
    debug_assert!(head.len().is_multiple_of(8), "a head of whole words");
    let mut sum = head
        .chunks_exact(8)
        .fold(seed ^ 0xcbf2_9ce4_8422_2325, |sum, word| {
            step(sum, le_u64(word))
        });
    let mut words = rest.chunks_exact(8);
    for word in &mut words {
        sum = step(sum, le_u64(word));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    sum = step(sum, u64::from_le_bytes(tail));
    let length = (head.len() + rest.len()) as u64;
    (sum ^ length).wrapping_mul(MULTIPLIER) ^ (sum >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(fill: u8) -> Box<[u8; BLOCK_BYTES]> {
        Box::new([fill; BLOCK_BYTES])
    }

    /// A log of `generation` with a record per entry of `commits` (size, blocks).
    fn log(generation: u64, commits: &[(u64, Vec<(u64, u8)>)]) -> Vec<u8> {
        let (header_bytes, header) = header(generation);
        let mut bytes = header_bytes.to_vec();
        let mut previous = header.checksum;
        for (size, blocks) in commits {
            let blocks: Vec<_> = blocks
                .iter()
                .map(|(no, fill)| (*no, block(*fill)))
                .collect();
            let (record, checksum) = encode_record(
                previous,
                generation,
                *size,
                blocks.iter().map(|(no, data)| (*no, &**data)),
            );
            bytes.extend_from_slice(&record);
            previous = checksum;
        }
        bytes
    }

    fn scanned(bytes: &[u8]) -> Option<Scan> {
        read_header(bytes).map(|header| scan(bytes, header))
    }

    #[test]
    fn records_read_back_as_written_in_order() {
        let bytes = log(
            7,
            &[(1 << 16, vec![(3, 1), (9, 2)]), (1 << 17, vec![(3, 5)])],
        );
        let scan = scanned(&bytes).expect("a valid header");
        assert_eq!(scan.end, bytes.len() as u64);
        let sizes: Vec<u64> = scan.records.iter().map(|r| r.size_bytes).collect();
        assert_eq!(sizes, [1 << 16, 1 << 17]);
        assert_eq!(scan.records[0].blocks, vec![(3, block(1)), (9, block(2))]);
        assert_eq!(scan.records[1].blocks, vec![(3, block(5))]);
    }

    #[test]
    fn every_cut_and_every_flipped_byte_ends_the_log_before_the_damaged_record() {
        let one = log(1, &[(1 << 16, vec![(0, 0xAA)])]);
        let two = log(1, &[(1 << 16, vec![(0, 0xAA)]), (1 << 16, vec![(1, 0xBB)])]);
        for cut in one.len()..two.len() {
            let scan = scanned(&two[..cut]).expect("the header is whole");
            assert_eq!(scan.records.len(), 1, "cut at {cut}");
            assert_eq!(scan.end, one.len() as u64);
        }
        for position in (one.len()..two.len()).step_by(61) {
            let mut flipped = two.clone();
            flipped[position] ^= 0x10;
            let scan = scanned(&flipped).expect("the header is whole");
            assert_eq!(scan.records.len(), 1, "byte {position} flipped");
        }
        for cut in 0..HEADER_BYTES {
            assert!(scanned(&two[..cut]).is_none(), "header cut at {cut}");
        }
    }

    #[test]
    fn records_of_another_generation_or_chain_are_not_read() {
        let older = log(3, &[(1 << 16, vec![(0, 1)]), (1 << 16, vec![(1, 2)])]);
        // A newer generation written over the older one's first bytes: the older record
        // behind it chains from another header and is not read.
        let newer = log(5, &[(1 << 16, vec![(0, 9)])]);
        let mut on_disk = older.clone();
        on_disk[..newer.len()].copy_from_slice(&newer);
        let scan = scanned(&on_disk).expect("the newer header");
        assert_eq!(scan.records.len(), 1);
        assert_eq!(scan.records[0].blocks, vec![(0, block(9))]);
        // The same bytes under a header of the same generation but another chain.
        let mut spliced = log(3, &[]);
        spliced.extend_from_slice(&older[newer.len()..]);
        assert!(scanned(&spliced).expect("a header").records.is_empty());
    }

    #[test]
    fn the_checksum_sees_a_swap_of_words_and_a_trailing_byte() {
        let mut bytes: Vec<u8> = (0..64).collect();
        let original = checksum(1, &[], &bytes);
        bytes.swap(0, 8);
        assert_ne!(checksum(1, &[], &bytes), original);
        let longer: Vec<u8> = (0..65).collect();
        assert_ne!(checksum(1, &[], &longer[..64]), checksum(1, &[], &longer));
        assert_ne!(checksum(1, &[], &[0; 8]), checksum(1, &[], &[0; 16]));
        // Taken in two parts, the sum is that of the parts laid end to end.
        assert_eq!(
            checksum(1, &longer[..32], &longer[32..]),
            checksum(1, &[], &longer)
        );
    }
}
