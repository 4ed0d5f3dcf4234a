//! The write-ahead log of a [`FileMemory`](super::FileMemory): commits appended to one of two
//! log files, each made durable by one sync, and copied into the data file at a checkpoint.
//!
//! ```text
//! header, at 0 (32 bytes)
//! 0   magic "USLOG" 0 0 2 (format 2; "USLOG" 0 0 1, format 1)  8 bytes
//! 8   generation                                            u64 LE
//! 16  zero                                                  u64 LE
//! 24  checksum of bytes 0..24                               u64 LE
//! one record per commit, from 32 on
//! 0   size of the memory after the commit, in bytes         u64 LE
//! 8   number of blocks                                      u64 LE
//! 16  link: the previous record's checksum (the header's for the first); in format 1, the
//!     generation                                            u64 LE
//! 24  checksum: of the previous record's checksum (the header's for the first) and of
//!     this record's bytes, these 8 read as zero             u64 LE
//! 32  blocks: block number (u64 LE), then the block's 4,096 bytes
//! ```
//!
//! A generation lives in log file `generation % 2`; the current one is the higher of the two
//! headers that are valid. A record belongs to the log while it links to the record before
//! (the header for the first) and, for the last of them, while its checksum matches: the scan
//! stops at the first record that does not link (bytes of an older generation whose
//! truncation was lost, or of a torn append), and drops the last if its checksum fails (a torn
//! or unsynced append).
//!
//! Why only the last record's checksum: a record is appended only after the one before it was
//! synced (its commit returned), so a record that a later one links to is durable and whole;
//! only the last can be torn. Its link is the checksum of the record it follows, a value that
//! exists only once that record was written, so stale or torn bytes after the last record
//! cannot link to it. An open then checks one record's bytes, not the log's (format 1
//! checked every record, and is still read so: its records hold the generation, not a link).
//!
//! Why two files: a new generation is written only after the data file holds the previous one,
//! synced, and never over it; after a power cut the previous generation is either current
//! (then replaying it rewrites what the file already holds) or superseded by a durable header,
//! so a torn start of a generation can never replay a prefix of an older one over newer data.

use super::BLOCK_BYTES;

/// The magic of format 2 (records linked), which every new generation is written in.
const MAGIC: [u8; 8] = *b"USLOG\0\0\x02";
/// The magic of format 1 (every record checked), read and continued until its generation ends.
const MAGIC_V1: [u8; 8] = *b"USLOG\0\0\x01";
/// Bytes of the header, and of a record before its blocks.
pub const HEADER_BYTES: usize = 32;
/// Bytes of one block in a record (its number, then its bytes): the earlier format's journal
/// lays blocks out the same way.
pub const BLOCK_RECORD_BYTES: usize = 8 + BLOCK_BYTES;

/// How a generation's records are laid out and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The first format: a record holds its generation, and an open checks every record.
    V1,
    /// A record holds the checksum of the one before (its link), and an open checks the links
    /// and the last record's checksum.
    V2,
}

/// A log file's valid header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The generation the file holds.
    pub generation: u64,
    /// The checksum the first record chains from.
    pub checksum: u64,
    /// How its records are laid out.
    pub format: Format,
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

/// The header of `generation`'s log file, in the current format.
pub fn header(generation: u64) -> ([u8; HEADER_BYTES], Header) {
    header_in(Format::V2, generation)
}

/// The header of `generation`'s log file in `format` (the tests write the first format).
pub fn header_in(format: Format, generation: u64) -> ([u8; HEADER_BYTES], Header) {
    let mut bytes = [0u8; HEADER_BYTES];
    bytes[..8].copy_from_slice(match format {
        Format::V1 => &MAGIC_V1,
        Format::V2 => &MAGIC,
    });
    bytes[8..16].copy_from_slice(&generation.to_le_bytes());
    let checksum = checksum(0, &bytes[..24], &[]);
    bytes[24..].copy_from_slice(&checksum.to_le_bytes());
    (
        bytes,
        Header {
            generation,
            checksum,
            format,
        },
    )
}

/// The header at the start of `bytes`, if it is a valid one.
pub fn read_header(bytes: &[u8]) -> Option<Header> {
    let format = match bytes.get(..8)? {
        magic if magic == MAGIC => Format::V2,
        magic if magic == MAGIC_V1 => Format::V1,
        _ => return None,
    };
    let checksum = le_u64(bytes.get(24..32)?);
    (self::checksum(0, &bytes[..24], &[]) == checksum).then(|| Header {
        generation: le_u64(&bytes[8..16]),
        checksum,
        format,
    })
}

/// A record of a commit of `blocks` that leaves the memory `size_bytes` long, in the log whose
/// generation is `generation`, laid out in `format`, chained from (and linked to) `previous`;
/// and its checksum, which the next record chains from.
pub fn encode_record<'a>(
    previous: u64,
    format: Format,
    generation: u64,
    size_bytes: u64,
    blocks: impl ExactSizeIterator<Item = (u64, &'a [u8; BLOCK_BYTES])>,
) -> (Vec<u8>, u64) {
    let mut bytes = Vec::with_capacity(HEADER_BYTES + blocks.len() * BLOCK_RECORD_BYTES);
    bytes.extend_from_slice(&size_bytes.to_le_bytes());
    bytes.extend_from_slice(&(blocks.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&link(format, generation, previous).to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    for (block, data) in blocks {
        bytes.extend_from_slice(&block.to_le_bytes());
        bytes.extend_from_slice(data);
    }
    let checksum = checksum(previous, &bytes[..HEADER_BYTES], &bytes[HEADER_BYTES..]);
    bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
    (bytes, checksum)
}

/// What a record's bytes 16..24 hold in `generation`'s log in `format`, after a record whose
/// checksum is `previous`: the link, or in format 1 the generation.
fn link(format: Format, generation: u64, previous: u64) -> u64 {
    match format {
        Format::V1 => generation,
        Format::V2 => previous,
    }
}

/// Where a record lies in the log's bytes, and its stored checksum.
#[derive(Clone, Copy)]
struct Frame {
    at: usize,
    length: usize,
    checksum: u64,
}

/// The valid records of a log file whose bytes are `bytes` (all of them) and whose valid
/// header is `header` (the module's docs say which are valid).
pub fn scan(bytes: &[u8], header: Header) -> Scan {
    let mut frames: Vec<Frame> = Vec::new();
    let mut at = HEADER_BYTES;
    let mut previous = header.checksum;
    while let Some(frame) = frame_at(bytes, at, link(header.format, header.generation, previous)) {
        // Format 1 has no links: every record is checked.
        if header.format == Format::V1 && !checks(bytes, frame, previous) {
            break;
        }
        frames.push(frame);
        at += frame.length;
        previous = frame.checksum;
    }
    if header.format == Format::V2 {
        if let Some(&last) = frames.last() {
            let before = frames
                .len()
                .checked_sub(2)
                .map_or(header.checksum, |index| frames[index].checksum);
            if !checks(bytes, last, before) {
                frames.pop();
                at = last.at;
                previous = before;
            }
        }
    }
    let records = frames
        .iter()
        .map(|frame| Record {
            size_bytes: le_u64(&bytes[frame.at..]),
            blocks: decode_blocks(&bytes[frame.at + HEADER_BYTES..frame.at + frame.length]),
        })
        .collect();
    Scan {
        records,
        end: at as u64,
        checksum: previous,
    }
}

/// The record at `at` if one whose bytes 16..24 are `expected` lies whole within `bytes`.
fn frame_at(bytes: &[u8], at: usize, expected: u64) -> Option<Frame> {
    let head = bytes.get(at..at.checked_add(HEADER_BYTES)?)?;
    if le_u64(&head[16..24]) != expected {
        return None;
    }
    let length = usize::try_from(le_u64(&head[8..16]))
        .ok()?
        .checked_mul(BLOCK_RECORD_BYTES)?
        .checked_add(HEADER_BYTES)?;
    bytes.get(at..at.checked_add(length)?)?;
    Some(Frame {
        at,
        length,
        checksum: le_u64(&head[24..32]),
    })
}

/// Whether the record `frame` of `bytes`, chained from `previous`, matches its checksum.
fn checks(bytes: &[u8], frame: Frame, previous: u64) -> bool {
    let head = &bytes[frame.at..frame.at + HEADER_BYTES];
    let blocks = &bytes[frame.at + HEADER_BYTES..frame.at + frame.length];
    // The checksum was taken with its own 8 bytes read as zero.
    let mut zeroed = [0u8; HEADER_BYTES];
    zeroed.copy_from_slice(head);
    zeroed[24..32].fill(0);
    checksum(previous, &zeroed, blocks) == frame.checksum
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
/// bytes a step because an open checks a record's bytes (format 1: every record's).
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
        log_in(Format::V2, generation, commits)
    }

    /// [`log`] in `format`.
    fn log_in(format: Format, generation: u64, commits: &[(u64, Vec<(u64, u8)>)]) -> Vec<u8> {
        let (header_bytes, header) = header_in(format, generation);
        let mut bytes = header_bytes.to_vec();
        let mut previous = header.checksum;
        for (size, blocks) in commits {
            let blocks: Vec<_> = blocks
                .iter()
                .map(|(no, fill)| (*no, block(*fill)))
                .collect();
            let (record, checksum) = encode_record(
                previous,
                format,
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
        for format in [Format::V1, Format::V2] {
            let one = log_in(format, 1, &[(1 << 16, vec![(0, 0xAA)])]);
            let two = log_in(
                format,
                1,
                &[(1 << 16, vec![(0, 0xAA)]), (1 << 16, vec![(1, 0xBB)])],
            );
            let (_, header) = header_in(format, 1);
            let after_one = scan(&one, header).checksum;
            for cut in one.len()..two.len() {
                let scan = scanned(&two[..cut]).expect("the header is whole");
                assert_eq!(scan.records.len(), 1, "{format:?}, cut at {cut}");
                assert_eq!(scan.end, one.len() as u64);
                assert_eq!(
                    scan.checksum, after_one,
                    "the next record chains from the first"
                );
            }
            for position in (one.len()..two.len()).step_by(61) {
                let mut flipped = two.clone();
                flipped[position] ^= 0x10;
                let scan = scanned(&flipped).expect("the header is whole");
                assert_eq!(scan.records.len(), 1, "{format:?}, byte {position} flipped");
                assert_eq!(scan.end, one.len() as u64);
            }
            for cut in 0..HEADER_BYTES {
                assert!(scanned(&two[..cut]).is_none(), "header cut at {cut}");
            }
        }
    }

    #[test]
    fn format_2_checks_the_last_record_and_the_links_format_1_every_record() {
        let commits = [
            (1 << 16, vec![(0, 0xAA)]),
            (1 << 16, vec![(1, 0xBB)]),
            (1 << 16, vec![(2, 0xCC)]),
        ];
        // A byte of the first record's block changed behind the log's back (a record that a
        // later one links to was synced, so no crash does this): format 2 does not read the
        // bytes again, format 1 does.
        let in_first_block = HEADER_BYTES + HEADER_BYTES + 8 + 100;
        let mut v2 = log(1, &commits);
        v2[in_first_block] ^= 0x01;
        assert_eq!(scanned(&v2).expect("a header").records.len(), 3);
        let mut v1 = log_in(Format::V1, 1, &commits);
        v1[in_first_block] ^= 0x01;
        assert!(scanned(&v1).expect("a header").records.is_empty());
        // A changed link ends format 2's log there.
        let second_link = HEADER_BYTES + (HEADER_BYTES + BLOCK_RECORD_BYTES) + 16;
        let mut unlinked = log(1, &commits);
        unlinked[second_link] ^= 0x01;
        let scan = scanned(&unlinked).expect("a header");
        assert_eq!(scan.records.len(), 1);
        assert_eq!(scan.end, (2 * HEADER_BYTES + BLOCK_RECORD_BYTES) as u64);
    }

    #[test]
    fn the_two_formats_are_told_apart_by_the_header() {
        let (v1, header_v1) = header_in(Format::V1, 4);
        let (v2, header_v2) = header_in(Format::V2, 4);
        assert_eq!(read_header(&v1), Some(header_v1));
        assert_eq!(read_header(&v2), Some(header_v2));
        assert_ne!(header_v1.checksum, header_v2.checksum);
        // Format 1's records under a format 2 header of the same generation are not read.
        let commits = [(1 << 16, vec![(0, 0xAA)])];
        let mut mixed = v2.to_vec();
        mixed.extend_from_slice(&log_in(Format::V1, 4, &commits)[HEADER_BYTES..]);
        assert!(scanned(&mixed).expect("a header").records.is_empty());
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
