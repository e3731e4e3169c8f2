// RUN: tilec opt %s --split-input-file --verify-diagnostics

// tile.make_tensor: an address is 64 bits wide.
func.func @address_i32(%q: i32) {
  // expected-error@+1 {{tile.make_tensor: an address is a 64-bit integer, got i32}}
  %A = tile.make_tensor %q[] : i32 -> !tile.tensor<8xf32>
  func.return
}

// -----

// tile.make_tensor: one size for each `?` dim.
func.func @missing_size(%q: i64) {
  // expected-error@+1 {{tile.make_tensor: 1 sizes expected for the `?` dims of !tile.tensor<?x8xf32>, got 0}}
  %A = tile.make_tensor %q[] : i64 -> !tile.tensor<?x8xf32>
  func.return
}
