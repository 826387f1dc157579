//! Buffers aligned for `O_DIRECT`, without unsafe code: an over-allocated
//! vector and the aligned window inside it.

/// Memory alignment of direct I/O buffers (enough for every logical block
/// size up to 4 KiB and for page-aligned DMA).
pub(crate) const MEM_ALIGN: usize = 4096;

/// A zeroed buffer of `len` bytes whose first byte is `MEM_ALIGN`-aligned.
pub(crate) struct AlignedBuf {
    raw: Vec<u8>,
    skip: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed aligned buffer of `len` bytes.
    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        let raw = vec![0u8; len + MEM_ALIGN];
        let skip = raw.as_ptr().align_offset(MEM_ALIGN).min(MEM_ALIGN);
        AlignedBuf { raw, skip, len }
    }

    /// An aligned copy of `data`.
    pub(crate) fn copy_of(data: &[u8]) -> AlignedBuf {
        let mut b = AlignedBuf::zeroed(data.len());
        b.as_mut_slice().copy_from_slice(data);
        b
    }

    /// The aligned bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.raw[self.skip..self.skip + self.len]
    }

    /// The aligned bytes, writable.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.skip..self.skip + self.len]
    }
}

/// True if `data` starts at a `MEM_ALIGN`-aligned address.
pub(crate) fn is_aligned(data: &[u8]) -> bool {
    data.as_ptr().align_offset(MEM_ALIGN) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_sized() {
        for len in [0usize, 1, 4096, 10_000] {
            let b = AlignedBuf::copy_of(&vec![7u8; len]);
            assert_eq!(b.as_slice().len(), len);
            assert!(len == 0 || is_aligned(b.as_slice()));
            assert!(b.as_slice().iter().all(|&x| x == 7));
        }
    }
}
