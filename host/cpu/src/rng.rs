//! Deterministic test and benchmark inputs.
//!
//! SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast generator whose streams are fixed by
//! the seed, so a failing input can be regenerated from the seed in a record.

/// SplitMix64 state.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The generator of `seed` after `draws` draws of [`SplitMix64::next_u64`] (its state
    /// steps by a constant): element `i` of a stream made one draw an element, computed on its
    /// own, so large inputs can be filled on every core with the values of one stream.
    pub fn after(seed: u64, draws: u64) -> Self {
        SplitMix64(seed.wrapping_add(draws.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `[0, 1)` with 24 random bits (every value exactly representable).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    /// A nonzero integer of magnitude `1..=mag` with a random sign, uniform (`mag > 0`):
    /// inputs whose sums are exact in `f32`, so a check can demand the exact result.
    pub fn signed_nonzero(&mut self, mag: u32) -> i32 {
        let v = 1 + self.below(mag as u64) as i32;
        if self.next_u32() & 1 == 0 { v } else { -v }
    }

    /// Uniform in `[0, bound)`; `bound > 0`.
    pub fn below(&mut self, bound: u64) -> u64 {
        // Lemire's multiply-shift; the tiny bias is irrelevant for test inputs.
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_stream() {
        // First outputs for seed 1234567 from the published reference implementation.
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
        assert_eq!(r.next_u64(), 9817491932198370423);
    }

    #[test]
    fn a_generator_after_k_draws_continues_the_stream() {
        let mut r = SplitMix64::new(99);
        let stream: Vec<u64> = (0..50).map(|_| r.next_u64()).collect();
        for (k, &v) in stream.iter().enumerate() {
            assert_eq!(SplitMix64::after(99, k as u64).next_u64(), v, "draw {k}");
        }
    }

    #[test]
    fn floats_are_in_unit_interval_and_bounded_ints_in_range() {
        let mut r = SplitMix64::new(7);
        for _ in 0..10_000 {
            let f = r.next_f32();
            assert!((0.0..1.0).contains(&f));
            assert!(r.below(10) < 10);
        }
    }
}
