// RUN: tilec opt %s -p thread-sigmoid | filecheck %s

// 1 + tanh(u) (either order) and 1 - tanh(u) become rcp(0.5 + 0.5 * exp2(-+2u * log2 e)); the tanh
// goes once unused. -2 / ln 2 = -2.8853900817779268.
// CHECK-LABEL: func.func @gelu
// CHECK-NOT:   math.tanh
// CHECK:       %[[K:.*]] = arith.constant -2.885390{{[0-9]*}}e+00 : f32
// CHECK-NEXT:  %[[X:.*]] = arith.mulf %u, %[[K]] : f32
// CHECK-NEXT:  %[[E:.*]] = math.exp2 %[[X]] fastmath<afn> : f32
// CHECK-NEXT:  %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
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
// CHECK:       %[[U2:.*]] = arith.mulf %w, %c2 : f32
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

// gelu_tanh as written, 0.5 * v * (1 + tanh(c * (v + 0.044715 * v * v * v))): the halving goes into
// the sigmoid (v * rcp(1 + e), no fma) and the odd cubic into Horner's form v * (k + k * 0.044715 * v^2)
// (k = -2c / ln 2 = -2.302208..., k * 0.044715 = -0.1029432...); nothing of the tanh, the cubic or the
// halving is left.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-NOT:   math.tanh
// CHECK:       %[[K:.*]] = arith.constant -2.302208{{[0-9]*}} : f32
// CHECK-NEXT:  %[[K3:.*]] = arith.constant -0.102943{{[0-9]*}} : f32
// CHECK-NEXT:  %[[SQ:.*]] = arith.mulf %v, %v : f32
// CHECK-NEXT:  %[[P:.*]] = math.fma %[[SQ]], %[[K3]], %[[K]] : f32
// CHECK-NEXT:  %[[X:.*]] = arith.mulf %v, %[[P]] : f32
// CHECK-NEXT:  %[[E:.*]] = math.exp2 %[[X]] fastmath<afn> : f32
// CHECK-NEXT:  %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:  %[[D:.*]] = arith.addf %[[E]], %[[ONE]] : f32
// CHECK-NEXT:  %[[R:.*]] = nvvm.rcp.approx.ftz.f %[[D]] : f32
// CHECK-NEXT:  %[[G:.*]] = arith.mulf %v, %[[R]] : f32
// CHECK-NOT:   arith.mulf
// CHECK-NOT:   arith.addf
// CHECK:       func.return %[[G]]
func.func @gelu_tanh(%v: f32) -> f32 {
  %half = arith.constant 5.000000e-01 : f32
  %hv = arith.mulf %half, %v : f32
  %c3 = arith.constant 4.471500e-02 : f32
  %a = arith.mulf %c3, %v : f32
  %b = arith.mulf %a, %v : f32
  %q = arith.mulf %b, %v : f32
  %w = arith.addf %v, %q : f32
  %c = arith.constant 7.978845608e-01 : f32
  %u = arith.mulf %c, %w : f32
  %one = arith.constant 1.000000e+00 : f32
  %t = math.tanh %u : f32
  %s = arith.addf %one, %t : f32
  %g = arith.mulf %hv, %s : f32
  func.return %g : f32
}

// Left as they are: a cubic of negative coefficient (v + c3 v^3 cancels; Horner's form would round
// differently), a cubic whose v^3 has another use, a cubic of two different values, and a halving
// with another use (the product keeps the fma form).
// CHECK-LABEL: func.func @not_folded
// CHECK:       %a = arith.mulf %c3, %v : f32
// CHECK:       %w = arith.addf %v, %q : f32
// CHECK:       arith.mulf %w, %{{.*}} : f32
// CHECK:       %q2 = arith.mulf %b2, %v : f32
// CHECK:       %w2 = arith.addf %v, %q2 : f32
// CHECK:       arith.mulf %w2, %{{.*}} : f32
// CHECK:       %w3 = arith.addf %v, %q3 : f32
// CHECK:       arith.mulf %w3, %{{.*}} : f32
// CHECK:       %hv = arith.mulf %half, %v : f32
// CHECK:       math.fma
// CHECK:       arith.mulf %hv, %{{.*}} : f32
// CHECK:       func.return
func.func @not_folded(%v: f32, %x: f32) -> (f32, f32, f32, f32, f32, f32) {
  %one = arith.constant 1.000000e+00 : f32
  %c3 = arith.constant -4.471500e-02 : f32
  %a = arith.mulf %c3, %v : f32
  %b = arith.mulf %a, %v : f32
  %q = arith.mulf %b, %v : f32
  %w = arith.addf %v, %q : f32
  %t = math.tanh %w : f32
  %s = arith.addf %one, %t : f32
  %p3 = arith.constant 4.471500e-02 : f32
  %a2 = arith.mulf %p3, %v : f32
  %b2 = arith.mulf %a2, %v : f32
  %q2 = arith.mulf %b2, %v : f32
  %w2 = arith.addf %v, %q2 : f32
  %t2 = math.tanh %w2 : f32
  %s2 = arith.addf %one, %t2 : f32
  %a3 = arith.mulf %p3, %v : f32
  %b3 = arith.mulf %a3, %x : f32
  %q3 = arith.mulf %b3, %v : f32
  %w3 = arith.addf %v, %q3 : f32
  %t3 = math.tanh %w3 : f32
  %s3 = arith.addf %one, %t3 : f32
  %half = arith.constant 5.000000e-01 : f32
  %hv = arith.mulf %half, %v : f32
  %t4 = math.tanh %x : f32
  %s4 = arith.addf %one, %t4 : f32
  %g4 = arith.mulf %hv, %s4 : f32
  func.return %s, %s2, %q2, %s3, %g4, %hv : f32, f32, f32, f32, f32, f32
}
