//! The `layout` target's properties on seeded random bytes, without cargo-fuzz or
//! sanitizers: a quick check after a layout change where libFuzzer is not installed.
//!
//!   cargo run --release --manifest-path host/fuzz/Cargo.toml --example replay [SEED] [INPUTS]
//!
//! A panic names the input; `cargo fuzz run layout` then finds it too.

use arbitrary::{Arbitrary, Unstructured};
use dynsmem_fuzz::{Ask, Family};

#[derive(Debug, Arbitrary)]
enum Input {
    Carve(Vec<Ask>),
    Family(Family),
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("SEED and INPUTS are integers"));
    let seed = args.next().unwrap_or(1);
    let inputs = args.next().unwrap_or(1_000_000);
    // xorshift64: any nonzero state.
    let mut state = seed | 1;
    let mut bytes = vec![0u8; 256];
    for _ in 0..inputs {
        for chunk in bytes.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        // Small values are where the edge cases are: shorten a quarter of the words.
        for w in bytes.chunks_mut(4).step_by(4) {
            w[2] = 0;
            w[3] = 0;
        }
        let Ok(input) = Input::arbitrary(&mut Unstructured::new(&bytes)) else { continue };
        match input {
            Input::Carve(asks) => dynsmem_fuzz::carve_sequence(&asks),
            Input::Family(f) => {
                dynsmem_fuzz::family(f);
                if let Family::Reduce { block, ipt, staged, n } = f {
                    dynsmem_fuzz::reduce_plan(block, ipt, staged, n);
                }
            }
        }
    }
    println!("{inputs} inputs from seed {seed}: every property held");
}
