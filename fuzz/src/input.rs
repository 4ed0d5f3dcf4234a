//! Reading structured values out of fuzz input bytes: past the end, every read gives zero, so
//! any input is a valid (if short) program.

/// Fuzz input, consumed from the front.
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Input { bytes }
    }

    /// The bytes not read yet.
    pub fn clone_rest(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The next byte.
    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((first, rest)) => {
                self.bytes = rest;
                *first
            }
            None => 0,
        }
    }

    /// The next `u16`.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// The next `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// A number below `bound` (`bound` > 0).
    pub fn below(&mut self, bound: u32) -> u32 {
        self.u32() % bound
    }

    /// Up to `max` bytes, as many as a length byte says.
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let len = (self.u16() as usize % (max + 1)).min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        taken
    }
}
