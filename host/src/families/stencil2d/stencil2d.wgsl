// 2-D stencil on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/stencil2d.rs (read that first) and of stencil2d.cu: a bordered tile
// of vec4 (HALO = 4 columns on each side), threads owning four columns and a strip of
// rows, the K x K weights and a register window of K rows of 4 + 2R floats, slid down the
// strip in steps unrolled by K so that sliding renames registers instead of copying them.
// The tile is a `var<workgroup>` array sized when the pipeline is created.
//
// What WGSL lacks: no asynchronous copy, so the tile is staged through registers; no
// const generics, so the window and weights are scalars named in the text (a
// function-scope array indexed in a loop may be put in local memory by the driver) and
// the host writes the unrolled rows and steps (host/src/families/stencil2d/mod.rs,
// `window_code`). The image is bound as vec4: rows are read and written as whole vectors
// where the width is a multiple of 4 (rows start 16-byte aligned), element by element
// otherwise.
//
// Template slots (names in double braces), filled by host/src/families/stencil2d/mod.rs:
//   SIZING        declarations of BLOCK, TILE_W and TILE_H (u32)
//   DERIVED       `const`, or `override` where SIZING declares overrides
//   RADIUS        1 or 2
//   DECLS         `var` declarations of the weights w<i> and the window s<slot>_<i>
//   LOAD_WEIGHTS  w<i> = wt[i]
//   FIRST_ROWS    the window's first K - 1 rows (slots 0 .. K - 2)
//   STEPS         K unrolled steps: read the next row into its slot, 4 outputs, store

{{SIZING}}
{{IDS}}
const RADIUS: u32 = {{RADIUS}}u;
const K: u32 = 2u * RADIUS + 1u;
const HALO: u32 = 4u;
{{DERIVED}} PITCH: u32 = TILE_W / 4u + 2u;
{{DERIVED}} ROWS: u32 = TILE_H + 2u * RADIUS;
{{DERIVED}} GROUPS: u32 = TILE_W / 4u;

struct Params {
    width: u32,
    height: u32,
    tile_w: u32,
    tile_h: u32,
}

@group(0) @binding(0) var<storage, read> input: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> tile: array<vec4<f32>, PITCH * ROWS>;
var<workgroup> wt: array<f32, K * K>;

fn pixel(i: u32) -> f32 {
    return input[i >> 2u][i & 3u];
}

// Tile vector (r, c): image row y0 - R + r, columns x0 - 4 + 4c .. + 4, clamped.
fn load(r: u32, c: u32, x0: u32, y0: u32, width: u32, height: u32, in_vec: bool) -> vec4<f32> {
    let gy = min(max(y0 + r, RADIUS) - RADIUS, height - 1u);
    let row = gy * width;
    let x = x0 + 4u * c;
    if (in_vec && x >= HALO && x - HALO + 4u <= width) {
        return input[(row + x - HALO) >> 2u];
    }
    var v: vec4<f32>;
    v.x = pixel(row + min(max(x, HALO) - HALO, width - 1u));
    v.y = pixel(row + min(max(x + 1u, HALO) - HALO, width - 1u));
    v.z = pixel(row + min(max(x + 2u, HALO) - HALO, width - 1u));
    v.w = pixel(row + min(max(x + 3u, HALO) - HALO, width - 1u));
    return v;
}

// Four outputs of row y from column x: one vec4 store where the row is aligned and whole.
fn store(y: u32, x: u32, width: u32, out_vec: bool, v: vec4<f32>) {
    let i = y * width + x;
    if (out_vec && x + 4u <= width) {
        output[i >> 2u] = v;
    } else {
        for (var c = 0u; c < 4u && x + c < width; c++) {
            output[(i + c) >> 2u][(i + c) & 3u] = v[c];
        }
    }
}

@compute @workgroup_size(BLOCK)
fn stencil2d(ids: Ids) {
    let width = params.width;
    let height = params.height;
    let g = ids.tid % GROUPS;
    let strip = TILE_H / (BLOCK / GROUPS);
    let y_first = (ids.tid / GROUPS) * strip;
    let vec_rows = (width & 3u) == 0u;
    for (var i = ids.tid; i < K * K; i += BLOCK) {
        wt[i] = weights[i];
    }
    workgroupBarrier();
    {{DECLS}}
    {{LOAD_WEIGHTS}}
    let tiles_x = max((width + TILE_W - 1u) / TILE_W, 1u);
    let tiles = tiles_x * ((height + TILE_H - 1u) / TILE_H);
    for (var t = ids.wid.x; t < tiles; t += ids.nwg.x) {
        let x0 = (t % tiles_x) * TILE_W;
        let y0 = (t / tiles_x) * TILE_H;
        // A tile whose border is inside the image (all but the edge tiles) is copied
        // vector by vector with no clamping.
        let inside = vec_rows && x0 >= HALO && x0 + TILE_W + HALO <= width && y0 >= RADIUS
            && y0 + TILE_H + RADIUS <= height;
        if (inside) {
            let origin = ((y0 - RADIUS) * width + x0 - HALO) >> 2u;
            let row_vecs = width >> 2u;
            // Four loads in flight before their stores, as the Rust kernel has its copies.
            var i = ids.tid;
            for (; i + 3u * BLOCK < PITCH * ROWS; i += 4u * BLOCK) {
                let i1 = i + BLOCK;
                let i2 = i + 2u * BLOCK;
                let i3 = i + 3u * BLOCK;
                let a = input[origin + (i / PITCH) * row_vecs + i % PITCH];
                let b = input[origin + (i1 / PITCH) * row_vecs + i1 % PITCH];
                let c = input[origin + (i2 / PITCH) * row_vecs + i2 % PITCH];
                let d = input[origin + (i3 / PITCH) * row_vecs + i3 % PITCH];
                tile[i] = a;
                tile[i1] = b;
                tile[i2] = c;
                tile[i3] = d;
            }
            for (; i < PITCH * ROWS; i += BLOCK) {
                tile[i] = input[origin + (i / PITCH) * row_vecs + i % PITCH];
            }
        } else {
            for (var i = ids.tid; i < PITCH * ROWS; i += BLOCK) {
                tile[i] = load(i / PITCH, i % PITCH, x0, y0, width, height, vec_rows);
            }
        }
        workgroupBarrier();
        {{FIRST_ROWS}}
        let x = x0 + 4u * g;
        var r = 0u;
        while (r < strip) {
            {{STEPS}}
        }
        workgroupBarrier();
    }
}
