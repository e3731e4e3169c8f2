// RUN: tilec opt %s -p thread-shared-divisor | filecheck %s

// Three divisions by one SSA value: one refined reciprocal, one range check over all
// dividends, the correction in the fast branch and the original divisions in the other.
// CHECK-LABEL: func.func @same_value
// CHECK:       %[[R0:.*]] = nvvm.rcp.approx.ftz.f %s : f32
// CHECK:       %[[T:.*]] = math.fma %{{.*}}, %[[R0]], %{{.*}} : f32
// CHECK-NEXT:  %[[R:.*]] = math.fma %[[R0]], %[[T]], %[[R0]] : f32
// CHECK-COUNT-3: math.absf %{{[abc]}} : f32
// CHECK:       %[[A:[0-9]+]], %[[B:[0-9]+]], %[[C:[0-9]+]] = scf.if %{{.*}} -> (f32, f32, f32) {
// CHECK-NEXT:    %[[Q0:.*]] = arith.mulf %a, %[[R]] : f32
// CHECK-NEXT:    %[[E:.*]] = math.fma %{{.*}}, %[[Q0]], %a : f32
// CHECK-NEXT:    math.fma %[[R]], %[[E]], %[[Q0]] : f32
// CHECK:       } else {
// CHECK-NEXT:    arith.divf %a, %s : f32
// CHECK-NEXT:    arith.divf %b, %s : f32
// CHECK-NEXT:    arith.divf %c, %s : f32
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[A]], %[[B]], %[[C]] : f32, f32, f32
func.func @same_value(%a: f32, %b: f32, %c: f32, %s: f32) -> (f32, f32, f32) {
  %0 = arith.divf %a, %s : f32
  %1 = arith.divf %b, %s : f32
  %2 = arith.divf %c, %s : f32
  func.return %0, %1, %2 : f32, f32, f32
}

// Loads of one register slot count as one divisor while nothing writes memory.
// CHECK-LABEL: func.func @same_load
// CHECK:       nvvm.rcp.approx.ftz.f
// CHECK:       scf.if %{{.*}} -> (f32, f32)
func.func @same_load(%a: f32, %b: f32, %m: memref<4xf32>, %i: index) -> (f32, f32) {
  %s0 = memref.load %m[%i] : memref<4xf32>
  %s1 = memref.load %m[%i] : memref<4xf32>
  %0 = arith.divf %a, %s0 : f32
  %1 = arith.divf %b, %s1 : f32
  func.return %0, %1 : f32, f32
}

// Untouched: a store between the loads may change the divisor, fast-math divisions
// are the translator's business, a lone division gains nothing, different divisors,
// and a division of a quotient in the same run.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:   nvvm.rcp.approx.ftz.f
// CHECK-NOT:   scf.if
// CHECK:       func.return
func.func @untouched(%a: f32, %b: f32, %m: memref<4xf32>, %i: index, %s: f32, %t: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
  %s0 = memref.load %m[%i] : memref<4xf32>
  memref.store %a, %m[%i] : memref<4xf32>
  %s1 = memref.load %m[%i] : memref<4xf32>
  %0 = arith.divf %a, %s0 : f32
  %1 = arith.divf %b, %s1 : f32
  %2 = arith.divf %a, %s fastmath<fast> : f32
  %3 = arith.divf %b, %s fastmath<fast> : f32
  %4 = arith.divf %a, %s : f32
  %5 = arith.addf %a, %b : f32
  %6 = arith.divf %a, %t : f32
  %7 = arith.divf %b, %s : f32
  func.return %0, %1, %2, %3, %4, %6, %7, %5 : f32, f32, f32, f32, f32, f32, f32, f32
}

// A quotient divided again by the same value starts a new run.
// CHECK-LABEL: func.func @chained
// CHECK-NOT:   nvvm.rcp.approx.ftz.f
// CHECK:       func.return
func.func @chained(%a: f32, %s: f32) -> f32 {
  %0 = arith.divf %a, %s : f32
  %1 = arith.divf %0, %s : f32
  func.return %1 : f32
}

// One divisor value loaded in an enclosing block: no memory check is needed to share it.
// CHECK-LABEL: func.func @outer_load
// CHECK:       scf.if %{{.*}} -> (f32, f32) {
// CHECK:         nvvm.rcp.approx.ftz.f %s : f32
func.func @outer_load(%a: f32, %b: f32, %m: memref<4xf32>, %i: index) -> (f32, f32) {
  %s = memref.load %m[%i] : memref<4xf32>
  %t = arith.constant true
  %r:2 = scf.if %t -> (f32, f32) {
    %0 = arith.divf %a, %s : f32
    %1 = arith.divf %b, %s : f32
    scf.yield %0, %1 : f32, f32
  } else {
    scf.yield %a, %b : f32, f32
  }
  func.return %r#0, %r#1 : f32, f32
}
