//! The example's kernels on dynsmem's own command line: `run`, `tune`, `bench`, `shapes` and
//! the rest, for `window_mean`, `chunk_sums` and `box_filter` only (add `dynsmem::host::families::FAMILIES`
//! to the list for the built-in families beside them):
//!
//! ```text
//! cargo run --release --bin own-cli -- run window_mean --backend cpu --n 4096 --block 64
//! cargo run --release --bin own-cli -- tune chunk_sums --backend cpu
//! cargo run --release --bin own-cli -- bench
//! ```

fn main() -> anyhow::Result<()> {
    dynsmem::cli::main(&[
        &own_kernel::WINDOW_MEAN,
        &own_kernel::CHUNK_SUMS,
        &own_kernel::BOX_FILTER,
        &own_kernel::PLANTED_FAULTS,
    ])
}
