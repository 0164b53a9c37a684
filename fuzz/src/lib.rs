//! Shared by the fuzz targets: a reader that turns the fuzzer's bytes into typed values.
//! Running out of bytes gives zeros and empty slices, never a panic.

/// Reads typed values from the front of the fuzzer's input.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Up to `n` bytes.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        head
    }

    /// A byte string whose length comes first (one byte, or two when it says 255).
    pub fn chunk(&mut self) -> &'a [u8] {
        let mut n = usize::from(self.u8());
        if n == 255 {
            n = usize::from(self.u16());
        }
        self.bytes(n)
    }

    /// The rest of the input.
    pub fn rest(&mut self) -> &'a [u8] {
        let n = self.data.len();
        self.bytes(n)
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let b = self.bytes(N);
        out[..b.len()].copy_from_slice(b);
        out
    }

    /// One byte.
    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    /// Two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    /// Four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// Eight bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// A float: one of the awkward ones (NaN, infinities, -0, huge, tiny, a half) or eight
    /// raw bytes.
    pub fn f64(&mut self) -> f64 {
        match self.u8() % 12 {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            4 => f64::MAX,
            5 => f64::MIN_POSITIVE / 2.0,
            6 => 0.5,
            7 => 2f64.powi(53),
            8 => f64::from(self.u16()),
            9 => -f64::from(self.u16()),
            _ => f64::from_le_bytes(self.array()),
        }
    }
}
