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
}
