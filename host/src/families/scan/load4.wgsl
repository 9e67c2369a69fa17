// Vector v of the input: whole where it lies before n, zeros past n. The LOAD4 slot of
// scan.wgsl and scan_lookback.wgsl (both read `input`, an array<vec4<T>>).
fn load4(v: u32, n: u32) -> vec4<T> {
    let e = 4u * v;
    if (e + 4u <= n) {
        return input[v];
    }
    var x = vec4<T>(T(0));
    for (var c = 0u; c < 4u; c++) {
        if (e + c < n) {
            x[c] = input[v][c];
        }
    }
    return x;
}
