//! The executor's device-memory checks on a kernel of its own: a vector access at an address
//! its alignment forbids faults (a GPU's "misaligned address"), naming the buffer and offset.

use dynsmem_cpu::{Arg, Cpu, CpuMem, FaultKind, LaunchDims, LaunchError, Schedule};
use dynsmem_kernels::gpu;
use dynsmem_kernels::vector::Vec4;

dynsmem_kernels::kernels! { TEST_KERNELS;
    /// Copies one 16-byte vector from `src` to `dst`.
    pub fn copy_vec4(src: *const f32, dst: *mut f32) {
        let v = unsafe { gpu::read_global(src as *const Vec4<f32>) };
        unsafe { gpu::write_global(dst as *mut Vec4<f32>, v) };
    }
}

fn run(src_offset: usize) -> Result<Vec<f32>, LaunchError> {
    let cpu = Cpu::new(Schedule::fast());
    let src = CpuMem::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).unwrap();
    let dst = CpuMem::zeroed(16).unwrap();
    cpu.launch(&TEST_KERNELS[0], LaunchDims::new(1, 1, 0), &[Arg::At(&src, src_offset), Arg::Mem(&dst)])?;
    Ok(dst.to_vec())
}

#[test]
fn an_aligned_vector_copies() {
    assert_eq!(run(16).unwrap(), vec![5.0, 6.0, 7.0, 8.0]);
}

#[test]
fn a_misaligned_vector_load_faults() {
    match run(4) {
        Err(LaunchError::Fault { fault, .. }) => match fault.kind {
            FaultKind::Misaligned { param, write, offset, access_bytes, align, .. } => {
                assert_eq!((param, write, offset, access_bytes, align), ("src", false, 4, 16, 16), "{fault}")
            }
            other => panic!("expected a misaligned load, got {other:?}"),
        },
        other => panic!("a 16-byte load 4 bytes into a buffer ran: {:?}", other.map_err(|e| e.to_string())),
    }
}
