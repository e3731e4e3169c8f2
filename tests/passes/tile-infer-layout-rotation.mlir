// RUN: tilec opt %s -p tile-infer-layout | filecheck %s

// A split store of an accumulator (TileLang's sparse MLA backward): the loop over all 32 rows
// reads row i + s*16 of the fragment behind `i < 16`. The loop is renumbered so that it reads
// row r, its own variable, where the fragment's layout holds it, and every other use of i is
// (r - s*16) mod 32: no shared copy of the fragment.
// CHECK-LABEL: func.func @split_store
// CHECK-NOT: %f_shared
// CHECK: tile.for %s
// CHECK: tile.parallel (%r, %j) in [32, 64] {
// CHECK-NEXT: %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT: %[[SH:.*]] = arith.muli %s, %[[C16]] : index
// CHECK-NEXT: %[[N:.*]] = arith.constant 32 : index
// CHECK-NEXT: %[[M:.*]] = arith.remsi %[[SH]], %[[N]] : index
// CHECK-NEXT: %[[P:.*]] = arith.addi %[[M]], %[[N]] : index
// CHECK-NEXT: %[[C:.*]] = arith.remui %[[P]], %[[N]] : index
// CHECK-NEXT: %[[B:.*]] = arith.subi %[[N]], %[[C]] : index
// CHECK-NEXT: %[[MOVED:.*]] = arith.addi %r, %[[B]] : index
// CHECK-NEXT: %[[I:.*]] = arith.remui %[[MOVED]], %[[N]] : index
// CHECK: arith.cmpi slt, %[[I]], %{{.*}} : index
// CHECK: tile.load %f[%r, %j]
// CHECK: tile.store %{{.*}}, %sh[%[[I]], %j]
func.func @split_store(%A: !tile.tensor<32x64xf32>, %O: !tile.tensor<16x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<32x64xf32, fragment>
    %sh = tile.alloc : !tile.buffer<16x64xf32, shared>
    tile.copy %A, %f : !tile.tensor<32x64xf32>, !tile.buffer<32x64xf32, fragment>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    tile.for %s = %c0 to %c2 step %c1 {
      tile.parallel (%r, %j) in [32, 64] {
        %c16 = arith.constant 16 : index
        %in = arith.cmpi slt, %r, %c16 : index
        scf.if %in {
          %c16b = arith.constant 16 : index
          %off = arith.muli %s, %c16b : index
          %row = arith.addi %r, %off : index
          %v = tile.load %f[%row, %j] : !tile.buffer<32x64xf32, fragment> -> f32
          tile.store %v, %sh[%r, %j] : f32, !tile.buffer<16x64xf32, shared>
        }
      }
      tile.copy %sh, %O : !tile.buffer<16x64xf32, shared>, !tile.tensor<16x64xf32>
    }
  }
  func.return
}

// Two accesses with different shifts cannot both be renumbered: the loop stays, and the
// fragment is read through its shared copy.
// CHECK-LABEL: func.func @two_shifts
// CHECK: %f_shared = tile.alloc
// CHECK: tile.load %f_shared[%{{.*}}, %j]
// CHECK: tile.load %f_shared[%{{.*}}, %j]
func.func @two_shifts(%A: !tile.tensor<32x64xf32>, %O: !tile.tensor<16x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<32x64xf32, fragment>
    %sh = tile.alloc : !tile.buffer<16x64xf32, shared>
    tile.copy %A, %f : !tile.tensor<32x64xf32>, !tile.buffer<32x64xf32, fragment>
    tile.parallel (%r, %j) in [32, 64] {
      %c16 = arith.constant 16 : index
      %in = arith.cmpi slt, %r, %c16 : index
      scf.if %in {
        %c8 = arith.constant 8 : index
        %a = arith.addi %r, %c8 : index
        %b = arith.addi %r, %c16 : index
        %x = tile.load %f[%a, %j] : !tile.buffer<32x64xf32, fragment> -> f32
        %y = tile.load %f[%b, %j] : !tile.buffer<32x64xf32, fragment> -> f32
        %z = arith.addf %x, %y : f32
        tile.store %z, %sh[%r, %j] : f32, !tile.buffer<16x64xf32, shared>
      }
    }
    tile.copy %sh, %O : !tile.buffer<16x64xf32, shared>, !tile.tensor<16x64xf32>
  }
  func.return
}

// Two loads of one address with a store between them are two shifts, not one (only arithmetic is
// compared by its form): no renumbering, and the fragment is read through its shared copy.
// CHECK-LABEL: func.func @loaded_shifts
// CHECK: %f_shared = tile.alloc
// CHECK: tile.parallel (%r, %j) in [32, 64] {
// CHECK-NOT: arith.remui
// CHECK: tile.load %f_shared[%ra, %j]
// CHECK: tile.load %f_shared[%rb, %j]
func.func @loaded_shifts(%A: !tile.tensor<32x64xf32>, %O: !tile.tensor<16x64xf32>, %Off: !tile.tensor<2xindex>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<32x64xf32, fragment>
    %sh = tile.alloc : !tile.buffer<16x64xf32, shared>
    tile.copy %A, %f : !tile.tensor<32x64xf32>, !tile.buffer<32x64xf32, fragment>
    %c0 = arith.constant 0 : index
    %a = tile.load %Off[%c0] : !tile.tensor<2xindex> -> index
    %c16 = arith.constant 16 : index
    tile.store %c16, %Off[%c0] : index, !tile.tensor<2xindex>
    %b = tile.load %Off[%c0] : !tile.tensor<2xindex> -> index
    tile.parallel (%r, %j) in [32, 64] {
      %in = arith.cmpi slt, %r, %c16 : index
      scf.if %in {
        %ra = arith.addi %r, %a : index
        %rb = arith.addi %r, %b : index
        %x = tile.load %f[%ra, %j] : !tile.buffer<32x64xf32, fragment> -> f32
        %y = tile.load %f[%rb, %j] : !tile.buffer<32x64xf32, fragment> -> f32
        %z = arith.addf %x, %y : f32
        tile.store %z, %sh[%r, %j] : f32, !tile.buffer<16x64xf32, shared>
      }
    }
    tile.copy %sh, %O : !tile.buffer<16x64xf32, shared>, !tile.tensor<16x64xf32>
  }
  func.return
}

// Two equal constant shifts (separate constants) rotate together, and a shift past the extent
// (40 = 8 mod 32) is taken modulo it.
// CHECK-LABEL: func.func @equal_shifts
// CHECK-NOT: %f_shared
// CHECK: tile.parallel (%r, %j) in [32, 64] {
// CHECK: arith.remui
// CHECK: tile.load %f[%r, %j]
// CHECK: tile.load %f[%r, %j]
func.func @equal_shifts(%A: !tile.tensor<32x64xf32>, %O: !tile.tensor<32x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<32x64xf32, fragment>
    tile.copy %A, %f : !tile.tensor<32x64xf32>, !tile.buffer<32x64xf32, fragment>
    tile.parallel (%r, %j) in [32, 64] {
      %c40 = arith.constant 40 : index
      %c40b = arith.constant 40 : index
      %in = arith.cmpi slt, %r, %c40 : index
      scf.if %in {
        %ra = arith.addi %r, %c40 : index
        %rb = arith.addi %c40b, %r : index
        %x = tile.load %f[%ra, %j] : !tile.buffer<32x64xf32, fragment> -> f32
        %y = tile.load %f[%rb, %j] : !tile.buffer<32x64xf32, fragment> -> f32
        %z = arith.addf %x, %y : f32
        tile.store %z, %O[%r, %j] : f32, !tile.tensor<32x64xf32>
      }
    }
  }
  func.return
}
