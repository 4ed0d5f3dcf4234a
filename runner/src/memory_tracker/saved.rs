//! The undo log of the memory tracker: the original content of every unit a message is
//! about to write, copied by the fault handler into room reserved beforehand.
//!
//! A signal handler may not allocate (malloc is not async-signal-safe: the fault may have
//! interrupted the allocator itself, e.g. in a host function). So the runtime reserves, at
//! the start of a message and when the memory grows, room for the worst case, one saved
//! unit per unit of the memory (each unit is saved at most once per message); the handler
//! only copies into that room. Reserved but unused room is address space the allocator maps
//! lazily: memory is only committed for the units actually saved.

/// Saved units, in the order they were saved.
#[derive(Debug, Default)]
pub(super) struct SavedUnits {
    /// Unit indices.
    indices: Vec<usize>,
    /// Their original content, one unit after the other, in the order of `indices`.
    bytes: Vec<u8>,
}

/// Grows `vec`'s capacity to at least `total` elements; false if the allocation failed.
pub(super) fn reserve_total<T>(vec: &mut Vec<T>, total: usize) -> bool {
    total <= vec.capacity() || vec.try_reserve(total - vec.len()).is_ok()
}

/// Pushes `value` if `vec` has room for it, without allocating; false (and `vec` unchanged)
/// if it is full.
pub(super) fn push_within_capacity<T>(vec: &mut Vec<T>, value: T) -> bool {
    if vec.len() < vec.capacity() {
        vec.push(value);
        true
    } else {
        false
    }
}

impl SavedUnits {
    /// Makes room for `units` saved units of `unit` bytes in all (those saved already
    /// included); false if the allocation failed. Not for the fault handler.
    pub fn reserve(&mut self, units: usize, unit: usize) -> bool {
        let Some(bytes) = units.checked_mul(unit) else {
            return false;
        };
        reserve_total(&mut self.indices, units) && reserve_total(&mut self.bytes, bytes)
    }

    /// Whether one more unit of `unit` bytes fits without allocating.
    pub fn has_room(&self, unit: usize) -> bool {
        self.indices.len() < self.indices.capacity()
            && self.bytes.capacity() - self.bytes.len() >= unit
    }

    /// Saves `content` as the original of unit `index`, without allocating (the fault
    /// handler's part); false, saving nothing, if the reserved room is used up.
    pub fn push(&mut self, index: usize, content: &[u8]) -> bool {
        if !self.has_room(content.len()) {
            return false;
        }
        self.bytes.extend_from_slice(content);
        self.indices.push(index);
        true
    }

    /// How many units are saved.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Forgets the saved units, keeping the reserved room.
    pub fn clear(&mut self) {
        self.indices.clear();
        self.bytes.clear();
    }

    /// The saved units of `unit` bytes each: (index, original content).
    pub fn iter(&self, unit: usize) -> impl Iterator<Item = (usize, &[u8])> {
        self.indices
            .iter()
            .copied()
            .zip(self.bytes.chunks_exact(unit.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_within_the_reserved_room_only() {
        let mut saved = SavedUnits::default();
        assert!(saved.reserve(2, 4));
        assert!(saved.push(7, &[1, 2, 3, 4]));
        assert!(saved.push(3, &[5, 6, 7, 8]));
        let (indices, bytes) = (saved.indices.capacity(), saved.bytes.capacity());
        if indices == 2 && bytes == 8 {
            // The allocator gave exactly what was asked: a third unit does not fit.
            assert!(!saved.has_room(4));
            assert!(!saved.push(1, &[0; 4]));
        }
        assert_eq!(saved.len(), 2);
        let units: Vec<_> = saved.iter(4).collect();
        assert_eq!(units, vec![(7, &[1, 2, 3, 4][..]), (3, &[5, 6, 7, 8][..])]);
        saved.clear();
        assert_eq!(saved.len(), 0);
        assert!(saved.has_room(4), "clearing keeps the room");
    }

    #[test]
    fn a_full_vector_is_not_grown() {
        let mut vec: Vec<u8> = Vec::new();
        assert!(!push_within_capacity(&mut vec, 1));
        assert!(reserve_total(&mut vec, 1));
        while vec.len() < vec.capacity() {
            assert!(push_within_capacity(&mut vec, 1));
        }
        let capacity = vec.capacity();
        assert!(!push_within_capacity(&mut vec, 1));
        assert_eq!(vec.capacity(), capacity);
    }
}
