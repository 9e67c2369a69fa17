//! The example's kernels described once on dynsmem's kernel contract, shared by its programs:
//! `src/main.rs` and `src/bin/chunk_sums.rs` sweep them with the library, `src/bin/cli.rs` gives
//! them dynsmem's whole command line (`run`, `tune`, `bench`, `shapes`) as registry families.

use dynsmem_host::contract::{Data, Fill, Kernel, Params};
use dynsmem_host::family::kernel::{DeviceImage, KernelFamily, Size};
use own_kernels::WindowConfig;

/// The images `build.rs` made of `kernels/`.
pub mod images {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// Where both kernels come from: this crate's images and its `kernels!` table.
pub const IMAGE: DeviceImage = DeviceImage { ptx: images::PTX, amdgpu: images::AMDGPU, cpu: own_kernels::KERNELS };

/// The moving average of a window of `w` over `n` floats, with twins in WGSL and CUDA C.
pub fn window_mean(n: u32, w: u32) -> Kernel {
    moving_average("window_mean_f32", n, w, &[])
        .define("WINDOW", w)
        .wgsl(include_str!("window_mean.wgsl"), "window_mean")
        .cuda(include_str!("window_mean.cu"), "window_mean_static")
}

/// The moving-average entry `entry` on `n` floats and a window of `w`: its arguments (`x`, `y`,
/// `n`, `window`, `per_thread`, then `extra` scalars in order), parameters and launch shape.
fn moving_average(entry: &'static str, n: u32, w: u32, extra: &[(&'static str, u32)]) -> Kernel {
    let cfg = |p: &Params| WindowConfig { block: p["block"], per_thread: p["per_thread"] };
    let mut k = Kernel::new(own_kernels::KERNELS, entry)
        .image(images::IMAGE_INFO)
        .input("x", n as usize, Fill::Random(1))
        .output("y", (n - w + 1) as usize)
        .scalar("n", n)
        .scalar("window", w)
        .param_arg("per_thread");
    for &(name, value) in extra {
        k = k.scalar(name, value);
    }
    k.params(&[("block", &[32, 64, 128, 256]), ("per_thread", &[1, 2, 4])])
        .block(|p| p["block"])
        .grid(move |p| cfg(p).grid(n, w))
        .shared_bytes(move |p| cfg(p).shared_bytes(w))
}

/// The `n` and `window` of a moving-average family's command line, refused unless
/// `1 <= window <= n` (the kernel makes `n - window + 1` outputs).
fn window_problem(p: &dynsmem_host::family::kernel::Problem, family: &str) -> dynsmem_host::Result<(u32, u32)> {
    let (n, w) = (p.u32("n")?, p.u32("window")?);
    if w == 0 || n < w {
        let reason = format!("a window of {w} needs 1 to n = {n} inputs");
        return Err(dynsmem_host::Error::InvalidProblem { kernel: family.into(), reason });
    }
    Ok((n, w))
}

/// [`window_mean`] as a family of the command line: `own-cli run window_mean --n 4096 --block 64`.
pub static WINDOW_MEAN: KernelFamily = KernelFamily {
    name: "window_mean",
    about: "Moving average of a window of floats over a launch-sized tile (the example crate's kernel)",
    sizes: &[Size::new("n", 1 << 22, 10_007, "Input floats"), Size::new("window", 33, 33, "Window width")],
    build: |p| window_problem(p, "window_mean").map(|(n, w)| window_mean(n, w)),
    bench: &[&[("window", 129)]],
    image: Some(IMAGE),
    shapes: "[gpu]\nodd-2^26-3-w33: --n 67108861 --window 33\nodd-10^7-w129: --n 10000019 --window 129\n\
             [small]\nodd-10007-w33: --n 10007 --window 33\nodd-5003-w7: --n 5003 --window 7\n\
             [random]\ngpu: --n 1000000..100000000 --window 3|33|129\nsmall: --n 200..20000 --window 3|33\n",
    ..KernelFamily::EMPTY
};

/// The configs [`planted_faults`] plants its faults at: `(block, per_thread)`.
pub const FAR_WRITE_AT: (u32, u32) = (64, 4);
pub const HANG_AT: (u32, u32) = (128, 2);

/// [`window_mean`]'s 12 configs, two of them planted ([`own_kernels::planted_code`]): at
/// [`FAR_WRITE_AT`] the kernel writes 16 GiB past `y` (a GPU's context is lost), at
/// [`HANG_AT`] its workgroups never leave a barrier. A sweep must record both as failed and
/// measure the other 10 (`ci/run` checks this on the CPU backend).
pub fn planted_faults(n: u32, w: u32) -> Kernel {
    let code = |(b, p)| own_kernels::planted_code(b, p);
    moving_average("window_mean_planted_f32", n, w, &[("far_at", code(FAR_WRITE_AT)), ("hang_at", code(HANG_AT))])
}

/// [`planted_faults`] as a family of the command line:
/// `own-cli tune planted_faults --backend cpu --n 10007 --window 33`.
pub static PLANTED_FAULTS: KernelFamily = KernelFamily {
    name: "planted_faults",
    about: "The moving average with a config that writes far past its output and one that hangs at a barrier \
            (tests that a sweep survives them)",
    sizes: &[Size::new("n", 1 << 22, 10_007, "Input floats"), Size::new("window", 33, 33, "Window width")],
    build: |p| window_problem(p, "planted_faults").map(|(n, w)| planted_faults(n, w)),
    image: Some(IMAGE),
    ..KernelFamily::EMPTY
};

/// A 2-D box filter of radius `radius` over a `height x width` image (the researcher
/// stencil): tiles of `tile_w x tile_h` outputs plus their halo in launch-sized memory, a
/// 1-D grid over the tiles. Checked by the CPU-run check (no reference, no twins).
pub fn box_filter(width: u32, height: u32, radius: u32) -> Kernel {
    let tiles = move |p: &Params| width.div_ceil(p["tile_w"]) * height.div_ceil(p["tile_h"]);
    Kernel::new(own_kernels::KERNELS, "box_filter_f32")
        .image(images::IMAGE_INFO)
        .input("x", (width * height) as usize, Fill::Random(3))
        .output("y", (width * height) as usize)
        .scalar("width", width)
        .scalar("height", height)
        .scalar("radius", radius)
        .param_arg("tile_w")
        .param_arg("tile_h")
        .params(&[("block", &[64, 128, 256]), ("tile_w", &[16, 32, 64]), ("tile_h", &[4, 8, 16])])
        .block(|p| p["block"])
        .grid(move |p| tiles(p).min(own_kernels::MAX_GRID))
        .shared_bytes(move |p| own_kernels::box_tile(p["tile_w"], p["tile_h"], radius).map(|(_, b)| b))
        .work(Some(8 * (width * height) as u64), 2.0 * ((2 * radius + 1) * (2 * radius + 1) * width * height) as f64)
}

/// [`box_filter`] as a family of the command line:
/// `own-cli tune box_filter --backend cpu --width 1777 --height 1000 --radius 3`.
pub static BOX_FILTER: KernelFamily = KernelFamily {
    name: "box_filter",
    about: "2-D box filter over tiles plus halo in launch-sized memory (the example crate's stencil)",
    sizes: &[
        Size::new("width", 8191, 1777, "Image columns"),
        Size::new("height", 4099, 1000, "Image rows"),
        Size::new("radius", 3, 3, "Filter radius (a (2r+1)^2 box)"),
    ],
    build: |p| Ok(box_filter(p.u32("width")?, p.u32("height")?, p.u32("radius")?)),
    image: Some(IMAGE),
    ..KernelFamily::EMPTY
};

/// Every config sums chunks of `SPAN` inputs (so all have the same outputs); the parameters
/// split a chunk between threads and items per thread.
const SPAN: u32 = 512;

pub fn chunk_sums(n: u32) -> Kernel {
    let x: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    Kernel::new(own_kernels::KERNELS, "chunk_sums_u32")
        .image(images::IMAGE_INFO)
        .input_data("x", Data::U32(x))
        .output_u32("sums", n.div_ceil(SPAN) as usize)
        .scalar("n", n)
        .param_arg("chunk")
        .params(&[("block", &[32, 64, 128, 256]), ("chunk", &[2, 4, 8, 16])])
        .restrict(|p| p["block"] * p["chunk"] == SPAN)
        .block(|p| p["block"])
        .grid(move |_| n.div_ceil(SPAN))
        .shared_bytes(|p| p["block"] * 4)
}

/// [`chunk_sums`] as a family of the command line (no twins: its static variants are refused).
pub static CHUNK_SUMS: KernelFamily = KernelFamily {
    name: "chunk_sums",
    about: "Sums of chunks of 512 u32s, split between threads and items per thread (the example crate's kernel)",
    sizes: &[Size::new("n", 1 << 22, 100_003, "Input u32s")],
    build: |p| Ok(chunk_sums(p.u32("n")?)),
    image: Some(IMAGE),
    ..KernelFamily::EMPTY
};
