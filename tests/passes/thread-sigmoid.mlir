// RUN: tilec opt %s -p thread-sigmoid | filecheck %s

// 1 + tanh(u) (either order) and 1 - tanh(u) become rcp(0.5 + 0.5 * exp2(-+2u * log2 e)); the tanh
// goes once unused. -2 / ln 2 = -2.8853900817779268.
// CHECK-LABEL: func.func @gelu
// CHECK-NOT:   math.tanh
// CHECK:       %[[K:.*]] = arith.constant -2.885390{{[0-9]*}}e+00 : f32
// CHECK:       %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:       %[[X:.*]] = arith.mulf %u, %[[K]] : f32
// CHECK-NEXT:  %[[E:.*]] = math.exp2 %[[X]] fastmath<afn> : f32
// CHECK-NEXT:  %[[D:.*]] = math.fma %[[E]], %[[HALF]], %[[HALF]] : f32
// CHECK-NEXT:  %[[R:.*]] = nvvm.rcp.approx.ftz.f %[[D]] : f32
// CHECK-NEXT:  arith.mulf %half_v, %[[R]] : f32
// CHECK:       %[[K2:.*]] = arith.constant 2.885390{{[0-9]*}}e+00 : f32
// CHECK:       arith.mulf %u, %[[K2]] : f32
// CHECK:       func.return
func.func @gelu(%u: f32, %half_v: f32) -> (f32, f32, f32) {
  %one = arith.constant 1.000000e+00 : f32
  %t = math.tanh %u : f32
  %s = arith.addf %one, %t : f32
  %g = arith.mulf %half_v, %s : f32
  %t2 = math.tanh %u : f32
  %s2 = arith.addf %t2, %one : f32
  %t3 = math.tanh %u : f32
  %s3 = arith.subf %one, %t3 : f32
  func.return %g, %s2, %s3 : f32, f32, f32
}

// u = c * w feeding only the tanh: c folds into the exponent's constant (0.7978845608 * -2 / ln 2
// = -2.302208...), the multiply goes. Where u has another use, it stays and nothing folds.
// CHECK-LABEL: func.func @scaled
// CHECK-NOT:   arith.mulf %c
// CHECK:       %[[K:.*]] = arith.constant -2.302208{{[0-9]*}} : f32
// CHECK:       %[[X:.*]] = arith.mulf %w, %[[K]] : f32
// CHECK-NEXT:  math.exp2 %[[X]] fastmath<afn> : f32
// CHECK:       %[[C2:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:  %[[U2:.*]] = arith.mulf %w, %[[C2]] : f32
// CHECK:       %[[K2:.*]] = arith.constant -2.885390{{[0-9]*}}e+00 : f32
// CHECK:       arith.mulf %[[U2]], %[[K2]] : f32
// CHECK:       func.return %{{.*}}, %{{.*}}, %[[U2]]
func.func @scaled(%w: f32) -> (f32, f32, f32) {
  %one = arith.constant 1.000000e+00 : f32
  %c = arith.constant 7.978845608e-01 : f32
  %u = arith.mulf %c, %w : f32
  %t = math.tanh %u : f32
  %s = arith.addf %one, %t : f32
  %c2 = arith.constant 5.000000e-01 : f32
  %u2 = arith.mulf %w, %c2 : f32
  %t2 = math.tanh %u2 : f32
  %s2 = arith.addf %one, %t2 : f32
  func.return %s, %s2, %u2 : f32, f32, f32
}

// A tanh with other uses stays; fast-math ones (tanh.approx already) and f64 are left alone.
// CHECK-LABEL: func.func @kept
// CHECK:       %t = math.tanh %u : f32
// CHECK:       math.exp2
// CHECK:       %tf = math.tanh %u fastmath<fast> : f32
// CHECK-NEXT:  %sf = arith.addf %one, %tf : f32
// CHECK:       %td = math.tanh %d : f64
// CHECK-NEXT:  %sd = arith.addf %oned, %td : f64
func.func @kept(%u: f32, %d: f64) -> (f32, f32, f32, f64) {
  %one = arith.constant 1.000000e+00 : f32
  %t = math.tanh %u : f32
  %s = arith.addf %one, %t : f32
  %tf = math.tanh %u fastmath<fast> : f32
  %sf = arith.addf %one, %tf : f32
  %oned = arith.constant 1.000000e+00 : f64
  %td = math.tanh %d : f64
  %sd = arith.addf %oned, %td : f64
  func.return %s, %t, %sf, %sd : f32, f32, f32, f64
}
