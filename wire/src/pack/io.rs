//! The byte cursor a payload is written to and read from, with the message's length width.

use super::DecodeError;

/// Appends a payload; container lengths take `width` bytes (1, 2, 4 or 8).
#[derive(Debug)]
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
    width: usize,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out` with `width`-byte lengths.
    pub fn new(out: &'a mut Vec<u8>, width: usize) -> Self {
        debug_assert!(matches!(width, 1 | 2 | 4 | 8), "width {width}");
        Self { out, width }
    }

    /// Appends raw bytes.
    pub fn put(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// Appends a container length in the message's width (the caller chose a width that holds
    /// it: [`Pack::max_len`](super::Pack::max_len)).
    pub fn put_len(&mut self, len: usize) {
        let bytes = (len as u64).to_le_bytes();
        debug_assert!(self.width == 8 || (len as u64) >> (8 * self.width) == 0, "len {len}");
        self.out.extend_from_slice(&bytes[..self.width]);
    }
}

/// Reads a payload from a borrowed body; every read is bounds-checked.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    width: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `buf` with `width`-byte lengths.
    pub fn new(buf: &'a [u8], width: usize) -> Self {
        Self { buf, pos: 0, width }
    }

    pub(super) fn set_width(&mut self, width: usize) {
        self.width = width;
    }

    /// Offset of the next read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated {
                at: self.pos,
                needed: n - self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        self.bytes(n).map(|_| ())
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// An unsigned little-endian integer of `n` ≤ 8 bytes.
    pub fn uint(&mut self, n: usize) -> Result<u64, DecodeError> {
        let mut wide = [0u8; 8];
        wide[..n].copy_from_slice(self.bytes(n)?);
        Ok(u64::from_le_bytes(wide))
    }

    /// A container length of elements that take at least `min_size` bytes each, refused when
    /// the bytes left could not hold that many (elements of no size count as one byte each,
    /// so a length never exceeds the body either way).
    pub fn len(&mut self, min_size: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        let len = self.uint(self.width)?;
        let left = self.remaining();
        let fits = usize::try_from(len)
            .ok()
            .and_then(|n| n.checked_mul(min_size.max(1)))
            .is_some_and(|need| need <= left);
        if !fits {
            return Err(DecodeError::Length { at, len, left });
        }
        Ok(len as usize)
    }
}
