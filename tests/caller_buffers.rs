//! A family's workload on a caller's buffers (`Workload::buffers`, `Workload::run_on`: what the
//! Python package launches on PyTorch tensors), checked without a GPU: the buffers a workload
//! lists, and every refusal made before anything launches (the count, a buffer one element
//! short, an address that is not a device address), then the CPU backend's own refusal of a
//! caller's stream. On CUDA the launches themselves are checked against PyTorch
//! (python/tests/test_cuda.py).

use dynsmem::host::contract::Workload;
use dynsmem::host::{Error, backend::Erase};

fn prepared<'b>(cpu: &'b dynsmem::host::backend::cpu::CpuBackend, args: &str) -> Box<dyn Workload + 'b> {
    let args: Vec<String> = args.split(' ').map(String::from).collect();
    dynsmem::cli::prepare_on(cpu.erase(), &args).expect("prepares").2
}

fn refusal(w: &dyn Workload, buffers: &[(u64, u64)]) -> String {
    match w.run_on(buffers, 0) {
        Err(e @ Error::CallerBuffers { .. }) => e.to_string(),
        other => panic!("expected a refusal of the caller's buffers, got {other:?}"),
    }
}

#[test]
fn a_row_kernel_lists_its_buffers_in_argument_order() {
    let cpu = dynsmem::cpu();
    let w = prepared(&cpu, "dynsmem run rmsnorm --backend cpu --rows 3 --cols 10 --block 4");
    let b = w.buffers();
    let names: Vec<(&str, &str, u64, bool)> = b.iter().map(|b| (b.name, b.element, b.len, b.output)).collect();
    assert_eq!(names, [("input", "f32", 30, false), ("input", "f32", 10, false), ("output", "f32", 30, true)]);
    assert!(b.iter().all(|b| !b.zeroed));
    // A histogram's bins are an accumulator: the caller clears them.
    let h = prepared(&cpu, "dynsmem run histogram --backend cpu --n 1000 --bins 16");
    assert!(h.buffers().iter().any(|b| b.output && b.zeroed && b.element == "u32"));
}

#[test]
fn the_callers_buffers_are_checked_before_anything_launches() {
    let cpu = dynsmem::cpu();
    let w = prepared(&cpu, "dynsmem run softmax --backend cpu --rows 4 --cols 100 --block 4");
    let need = 4 * 100 * 4;
    let e = refusal(&*w, &[(4096, need)]);
    assert!(e.contains("softmax_f32") && e.contains("1 buffers given, the kernel takes 2 (input, output)"), "{e}");
    // One element short, for either buffer.
    let e = refusal(&*w, &[(4096, need - 4), (8192, need)]);
    assert!(e.contains("buffer 0 (input) holds 1596 bytes; the launch reads 1600 (400 f32 values)"), "{e}");
    let e = refusal(&*w, &[(4096, need), (8192, need - 4)]);
    assert!(e.contains("buffer 1 (output) holds 1596 bytes; the launch writes 1600"), "{e}");
    let e = refusal(&*w, &[(0, need), (8192, need)]);
    assert!(e.contains("buffer 0 (input) is at address 0x0"), "{e}");
    let e = refusal(&*w, &[(4098, need), (8192, need)]);
    assert!(e.contains("not a 4-byte aligned device address"), "{e}");
    // Buffers that fit reach the backend, which here cannot take a caller's memory.
    match w.run_on(&[(4096, need), (8192, need)], 0) {
        Err(Error::Unsupported { what, .. }) => assert!(what.contains("caller's buffers and stream"), "{what}"),
        other => panic!("the CPU backend launched on a caller's buffers: {other:?}"),
    }
}

#[test]
fn a_workload_of_several_launches_refuses_a_callers_buffers() {
    let cpu = dynsmem::cpu();
    let w = prepared(&cpu, "dynsmem run sgemm --backend cpu --m 16 --n 16 --k 16");
    assert!(w.buffers().is_empty());
    let e = w.run_on(&[], 0).unwrap_err().to_string();
    assert!(e.contains("on the caller's buffers") && e.contains("runs only on its own"), "{e}");
}

#[test]
fn the_check_takes_each_buffers_bytes_and_the_alignment_asked_for() {
    use dynsmem::host::contract::{BufferArg, check_caller_buffers};
    // HGEMM's: 16-bit A and B, an f32 C, 16-byte aligned (its tensor maps' addresses).
    let arg = |name, element, len: u64, size: u64, output| BufferArg {
        name,
        element,
        len,
        bytes: len * size,
        output,
        zeroed: false,
    };
    let wanted = [arg("a", "f16", 64, 2, false), arg("b", "f16", 32, 2, false), arg("c", "f32", 8, 4, true)];
    assert!(check_caller_buffers("hgemm", &wanted, &[(256, 128), (512, 64), (768, 32)], 16).is_ok());
    let e = check_caller_buffers("hgemm", &wanted, &[(256, 128), (512, 62), (768, 32)], 16).unwrap_err().to_string();
    assert_eq!(e, "hgemm: on the caller's buffers: buffer 1 (b) holds 62 bytes; the launch reads 64 (32 f16 values)");
    let e = check_caller_buffers("hgemm", &wanted, &[(256, 128), (520, 64), (768, 32)], 16).unwrap_err().to_string();
    assert!(e.ends_with("buffer 1 (b) is at address 0x208: not a 16-byte aligned device address"), "{e}");
}
