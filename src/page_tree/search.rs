//! The search of a sorted run of keys read one at a time from stable memory: a leaf's ids
//! (through its slots) and an index page's lowest keys of leaves.
//!
//! Every key read costs the system API's fee (docs/metering.md §5), and on an edge host every
//! 4 KiB block it lands in may be a read of the file, so the search reads as few keys as it
//! can. The last key is tried first: the users of a batch go in in id order, so most of an
//! append's search is that one probe. Then the first, and then the probes interpolate between
//! the keys read around the range left ([`probe_between`]): the ids of an aged table and the
//! by-name index's hashed keys are spread evenly over a leaf's range and over an index page's,
//! so a search reads fewer keys than a binary search (the tests count them). After
//! [`INTERPOLATED_PROBES`] it halves the range left, so keys that are not even (where the ids
//! end and the names start) take at most that many probes more than a binary search.

/// Probes that interpolate before the search halves the range: on even keys the range left
/// after them is almost always empty (fewer leave more to halve, more cost uneven keys more
/// probes; the tests of [`search`]'s users count both).
pub const INTERPOLATED_PROBES: usize = 5;

/// Where `key` would lie among the positions `low..high` if the keys from `below` (at
/// `low - 1`) to `above` (at `high`) were spread evenly: a position in `low..high`. Needs
/// `1 <= low < high` and `below < key < above`.
fn probe_between(low: usize, high: usize, below: u64, above: u64, key: u64) -> usize {
    // In floating point: a few Wasm instructions, where a 128-bit division is a call of
    // hundreds; its rounding moves the estimate by a fraction of a position at most. Wasm's
    // float arithmetic is deterministic (no NaN arises here), as the IC's replicas need.
    let fraction = (key - below) as f64 / (above - below) as f64;
    let offset = (fraction * (high - (low - 1)) as f64) as usize;
    // `fraction` is below 1, so this is at most `high` before the clamp.
    (low - 1 + offset).clamp(low, high - 1)
}

/// Searches the `count` keys that `key_at` reads (ascending and distinct) for `key`, as
/// [`slice::binary_search`] does: `Ok` with its position, or `Err` with where it would go.
/// Reads as few keys as the module's documentation says; a failed read ends the search.
pub fn search<E>(
    count: usize,
    key: u64,
    mut key_at: impl FnMut(usize) -> Result<u64, E>,
) -> Result<Result<usize, usize>, E> {
    if count == 0 {
        return Ok(Err(0));
    }
    let last = key_at(count - 1)?;
    if key > last {
        return Ok(Err(count));
    }
    if key == last {
        return Ok(Ok(count - 1));
    }
    let first = key_at(0)?;
    if key <= first {
        return Ok(if key == first { Ok(0) } else { Err(0) });
    }
    search_between(1, count - 1, first, last, key, key_at)
}

/// Searches positions `low..high` for `key`, knowing that the key at `low - 1` is `below` and
/// the one at `high` is `above`, with `below < key < above` and `1 <= low <= high`: the answer
/// is [`search`]'s. `high` may be one past the last position, `above` then a bound that every
/// key is below: a caller that knows the keys around its run (an index page, from the level
/// above) reads neither.
pub fn search_between<E>(
    mut low: usize,
    mut high: usize,
    mut below: u64,
    mut above: u64,
    key: u64,
    mut key_at: impl FnMut(usize) -> Result<u64, E>,
) -> Result<Result<usize, usize>, E> {
    let mut probes = 0;
    while low < high {
        let middle = if probes < INTERPOLATED_PROBES {
            probe_between(low, high, below, above, key)
        } else {
            low + (high - low) / 2
        };
        probes += 1;
        let found = key_at(middle)?;
        if found == key {
            return Ok(Ok(middle));
        }
        if found < key {
            low = middle + 1;
            below = found;
        } else {
            high = middle;
            above = found;
        }
    }
    Ok(Err(low))
}

/// Searches positions `low..high` for `key` by halving the range, knowing what
/// [`search_between`] knows: for a run whose keys are not even between the bounds (an id's
/// search where the ids end and the by-name index's keys start, all above every id).
pub fn bisect_between<E>(
    mut low: usize,
    mut high: usize,
    key: u64,
    mut key_at: impl FnMut(usize) -> Result<u64, E>,
) -> Result<Result<usize, usize>, E> {
    while low < high {
        let middle = low + (high - low) / 2;
        let found = key_at(middle)?;
        if found == key {
            return Ok(Ok(middle));
        }
        if found < key {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Ok(Err(low))
}
