//! Splitting CPU reference computations over the host's cores: references of 2^28-element
//! problems would otherwise take longer than everything else in a benchmark.

/// `out[i] = f(i)` for every index, in contiguous chunks on every available core.
pub fn fill<T: Send>(out: &mut [T], f: impl Fn(usize) -> T + Sync) {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let chunk = out.len().div_ceil(threads).max(4096);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, o) in part.iter_mut().enumerate() {
                    *o = f(c * chunk + j);
                }
            });
        }
    });
}

/// `f(range)` for contiguous ranges covering `0..n` in order, each on a core of its own:
/// for a scan over a large slice whose per-range results combine (a check's mismatches).
pub fn chunks<R: Send>(n: usize, f: impl Fn(std::ops::Range<usize>) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let chunk = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        let f = &f;
        let parts: Vec<_> =
            (0..n.div_ceil(chunk).max(1)).map(|c| s.spawn(move || f(c * chunk..((c + 1) * chunk).min(n)))).collect();
        parts.into_iter().map(|p| p.join().expect("a chunk's thread panicked")).collect()
    })
}

/// `f(i)` for `0..n`, computed with [`fill`].
pub fn map<T: Send + Default + Clone>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); n];
    fill(&mut out, f);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_index_is_computed_once_in_place() {
        let v = super::map(100_003, |i| i * 3);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i * 3));
        assert!(super::map(0, |i| i).is_empty());
    }

    #[test]
    fn chunks_cover_every_index_once_in_order() {
        for n in [0, 1, 65_535, 65_536, 1_000_003] {
            let parts = super::chunks(n, |r| r);
            assert_eq!(parts.first().map(|r| r.start), Some(0));
            assert_eq!(parts.last().map(|r| r.end), Some(n));
            assert!(parts.windows(2).all(|w| w[0].end == w[1].start), "{parts:?}");
        }
    }
}
