//! Carving the launch-sized workgroup-memory region into typed, aligned sub-arrays.
//!
//! This module is compiled for the device AND for the host: the kernel finds its tile and
//! scratch offsets with exactly the code the host uses to compute `shared_mem_bytes`, so
//! the two cannot drift apart. Sizes are `u32` bytes (workgroup memory is at most a few
//! hundred KB on any GPU), and every step checks for overflow instead of wrapping.
//!
//! ```
//! use dynsmem_kernels::layout::Carve;
//! let mut carve = Carve::new();
//! let tile = carve.array::<f32>(256 * 8).unwrap();     // 8192 bytes at offset 0
//! let flags = carve.array::<u8>(3).unwrap();           // 3 bytes at offset 8192
//! let counts = carve.array::<u32>(256).unwrap();       // aligned up to 8196
//! assert_eq!((tile.offset(), flags.offset(), counts.offset()), (0, 8192, 8196));
//! assert_eq!(carve.bytes(), 8196 + 1024);
//! ```

use core::marker::PhantomData;

use crate::gpu::REGION_ALIGN;

/// Why a carve could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutError {
    /// The total size does not fit in `u32` bytes: `offset` was reached before asking for
    /// `len` more elements of `elem_bytes` each.
    Overflow { offset: u32, len: u32, elem_bytes: u32 },
    /// An alignment larger than the region's base alignment ([`REGION_ALIGN`]) or not a
    /// power of two was asked for.
    BadAlign { align: u32 },
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            LayoutError::Overflow { offset, len, elem_bytes } => write!(
                f,
                "shared-memory layout overflows u32: {len} elements of {elem_bytes} bytes after offset {offset}"
            ),
            LayoutError::BadAlign { align } => {
                write!(f, "alignment {align} is not a power of two no larger than the region alignment {REGION_ALIGN}")
            }
        }
    }
}

impl core::error::Error for LayoutError {}

/// A typed sub-array of the region: `len` elements of `T` starting `offset` bytes in.
/// Plain data: it carries no pointer, so the host can hold and print it.
pub struct Slice<T> {
    offset: u32,
    len: u32,
    _elem: PhantomData<fn() -> T>,
}

impl<T> Clone for Slice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Slice<T> {}
impl<T> PartialEq for Slice<T> {
    fn eq(&self, other: &Self) -> bool {
        self.offset == other.offset && self.len == other.len
    }
}
impl<T> Eq for Slice<T> {}
impl<T> core::fmt::Debug for Slice<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Slice<{}>{{offset: {}, len: {}}}", core::any::type_name::<T>(), self.offset, self.len)
    }
}

impl<T> Slice<T> {
    /// Byte offset from the start of the region.
    #[inline(always)]
    pub fn offset(self) -> u32 {
        self.offset
    }
    /// Number of elements.
    #[inline(always)]
    pub fn len(self) -> u32 {
        self.len
    }
    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
    /// Bytes the elements occupy (`len * size_of::<T>()`; cannot overflow, the carve checked it).
    #[inline(always)]
    pub fn bytes(self) -> u32 {
        self.len * size_of::<T>() as u32
    }
    /// One past the last byte.
    #[inline(always)]
    pub fn end(self) -> u32 {
        self.offset + self.bytes()
    }
}

/// A cursor that hands out consecutive aligned sub-arrays of the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Carve {
    cursor: u32,
}

impl Carve {
    #[inline(always)]
    pub const fn new() -> Self {
        Carve { cursor: 0 }
    }

    /// `len` elements of `T`, aligned to `align_of::<T>()`.
    #[inline(always)]
    pub fn array<T>(&mut self, len: u32) -> Result<Slice<T>, LayoutError> {
        self.array_aligned::<T>(len, align_of::<T>() as u32)
    }

    /// `len` elements of `T`, aligned to `max(align, align_of::<T>())` bytes, e.g. 16 so
    /// that the array can also be read as 16-byte vectors.
    #[inline(always)]
    pub fn array_aligned<T>(&mut self, len: u32, align: u32) -> Result<Slice<T>, LayoutError> {
        let align = if (align_of::<T>() as u32) > align { align_of::<T>() as u32 } else { align };
        if !align.is_power_of_two() || align > REGION_ALIGN {
            return Err(LayoutError::BadAlign { align });
        }
        let elem_bytes = size_of::<T>() as u32;
        let overflow = LayoutError::Overflow { offset: self.cursor, len, elem_bytes };
        let offset = match self.cursor.checked_add(align - 1) {
            Some(v) => v & !(align - 1),
            None => return Err(overflow),
        };
        let end = match len.checked_mul(elem_bytes) {
            Some(b) => match offset.checked_add(b) {
                Some(e) => e,
                None => return Err(overflow),
            },
            None => return Err(overflow),
        };
        self.cursor = end;
        Ok(Slice { offset, len, _elem: PhantomData })
    }

    /// Total bytes carved so far: the `shared_mem_bytes` a launch must give.
    #[inline(always)]
    pub fn bytes(&self) -> u32 {
        self.cursor
    }
}
