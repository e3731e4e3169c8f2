// RUN: tilec opt %s -p thread-exp2-runs | filecheck %s

// Eight exponentials in a row: one minimum of their arguments (a tree: depth 3), one compare
// (unordered or at least -126: NaNs take the short path), the short ones (fastmath<afn>:
// MUFU.EX2 alone) in one branch, the originals in the other.
// CHECK-LABEL: func.func @run
// CHECK:       %[[M01:.*]] = arith.minnumf %a0, %a1 : f32
// CHECK-NEXT:  %[[M23:.*]] = arith.minnumf %a2, %a3 : f32
// CHECK-NEXT:  %[[M45:.*]] = arith.minnumf %a4, %a5 : f32
// CHECK-NEXT:  %[[M67:.*]] = arith.minnumf %a6, %a7 : f32
// CHECK-NEXT:  %[[L:.*]] = arith.minnumf %[[M01]], %[[M23]] : f32
// CHECK-NEXT:  %[[R:.*]] = arith.minnumf %[[M45]], %[[M67]] : f32
// CHECK-NEXT:  %[[M:.*]] = arith.minnumf %[[L]], %[[R]] : f32
// CHECK-NEXT:  %[[B:.*]] = arith.constant -1.260000e+02 : f32
// CHECK-NEXT:  %[[OK:.*]] = arith.cmpf uge, %[[M]], %[[B]] : f32
// CHECK-NEXT:  %{{.*}} = scf.if %[[OK]] -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT:    math.exp2 %a0 fastmath<afn> : f32
// CHECK-COUNT-7: math.exp2 %a{{[0-9]}} fastmath<afn> : f32
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } else {
// CHECK-NEXT:    math.exp2 %a0 : f32
// CHECK-COUNT-7: math.exp2 %a{{[0-9]}} : f32
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  }
func.func @run(%a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %a6: f32, %a7: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
  %0 = math.exp2 %a0 : f32
  %1 = math.exp2 %a1 : f32
  %2 = math.exp2 %a2 : f32
  %3 = math.exp2 %a3 : f32
  %4 = math.exp2 %a4 : f32
  %5 = math.exp2 %a5 : f32
  %6 = math.exp2 %a6 : f32
  %7 = math.exp2 %a7 : f32
  func.return %0, %1, %2, %3, %4, %5, %6, %7 : f32, f32, f32, f32, f32, f32, f32, f32
}

// Untouched: a pair (the check would cost what it saves), fast-math exponentials (already
// short), f16 ones, and a run broken by other ops or by an exponential of an exponential.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:   scf.if
// CHECK-NOT:   arith.minnumf
// CHECK:       func.return
func.func @untouched(%a: f32, %b: f32, %h: f16) -> (f32, f32, f32, f16, f32, f32) {
  %0 = math.exp2 %a : f32
  %1 = math.exp2 %b : f32
  %x = arith.addf %0, %1 : f32
  %2 = math.exp2 %a fastmath<afn> : f32
  %3 = math.exp2 %b fastmath<afn> : f32
  %4 = math.exp2 %a fastmath<afn> : f32
  %5 = math.exp2 %b fastmath<afn> : f32
  %6 = math.exp2 %a fastmath<afn> : f32
  %7 = math.exp2 %b fastmath<afn> : f32
  %8 = math.exp2 %a fastmath<afn> : f32
  %9 = math.exp2 %b fastmath<afn> : f32
  %h0 = math.exp2 %h : f16
  %e0 = math.exp2 %a : f32
  %e1 = math.exp2 %e0 : f32
  %e2 = math.exp2 %e1 : f32
  %e3 = math.exp2 %e2 : f32
  %e4 = math.exp2 %e3 : f32
  %e5 = math.exp2 %e4 : f32
  %e6 = math.exp2 %e5 : f32
  %e7 = math.exp2 %e6 : f32
  func.return %x, %2, %9, %h0, %e7, %e7 : f32, f32, f32, f16, f32, f32
}
