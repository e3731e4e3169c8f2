"""fp8 rounding of the interpreter and the simulator (`targets/interp/float8.py`) is torch's,
bit for bit: every f16 and bf16 code, random f32 over the whole range, the special values,
float64 (rounded through float32 as torch does), and decode → encode of all 256 codes."""

import ml_dtypes
import numpy as np
import pytest
import torch
from tilec.targets.interp.float8 import encode, to_float8
from tilec.targets.interp.values import convert

FORMATS = [(torch.float8_e4m3fn, ml_dtypes.float8_e4m3fn), (torch.float8_e5m2, ml_dtypes.float8_e5m2)]
IDS = ["e4m3fn", "e5m2"]


def _torch_codes(x, tdt) -> np.ndarray:
    return torch.from_numpy(np.ascontiguousarray(x)).to(tdt).view(torch.uint8).numpy()


def _f32_samples() -> np.ndarray:
    rng = np.random.default_rng(11)
    scaled = [rng.standard_normal(20000).astype(np.float32) * s for s in (1e-6, 1e-3, 1e-2, 1, 30, 300, 1e4, 1e5)]
    sweep = np.arange(0, 1 << 32, 65537, dtype=np.uint64).astype(np.uint32).view(np.float32)  # every exponent
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 448, 464, 464.0001, 479.99, 480, 1e30,
                        57344, 61439.996, 61440, 65536, 2.0**-9, 2.0**-10, 2.0**-10 * 1.0001, 2.0**-16,
                        2.0**-17, 2.0**-17 * 1.0001, -2.0**-20], np.float32)
    return np.concatenate([*scaled, sweep, special])


@pytest.mark.parametrize("tdt,mdt", FORMATS, ids=IDS)
def test_f32_matches_torch(tdt, mdt):
    x = _f32_samples()
    ours, theirs = encode(x, mdt), _torch_codes(x, tdt)
    bad = ours != theirs
    assert not bad.any(), (x[bad][:8], ours[bad][:8], theirs[bad][:8])


@pytest.mark.parametrize("tdt,mdt", FORMATS, ids=IDS)
@pytest.mark.parametrize("src", [torch.float16, torch.bfloat16])
def test_every_16_bit_code_matches_torch(tdt, mdt, src):
    x = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(src)
    ours = encode(x.float().numpy(), mdt)
    np.testing.assert_array_equal(ours, x.to(tdt).view(torch.uint8).numpy())


@pytest.mark.parametrize("tdt,mdt", FORMATS, ids=IDS)
def test_float64_rounds_through_float32(tdt, mdt):
    x = np.concatenate([np.random.default_rng(3).standard_normal(20000) * 100, [1.0625 + 1e-12, -(1.0625 + 1e-12)]])
    np.testing.assert_array_equal(encode(x, mdt), _torch_codes(x, tdt))
    assert encode(1.0625 + 1e-12, ml_dtypes.float8_e4m3fn) == 0x38  # 1.0: the tie in float32 goes to even


@pytest.mark.parametrize("tdt,mdt", FORMATS, ids=IDS)
def test_every_code_round_trips(tdt, mdt):
    codes = np.arange(256, dtype=np.uint8)
    values = codes.view(mdt).astype(np.float32)
    np.testing.assert_array_equal(values, torch.from_numpy(codes).view(tdt).float().numpy())
    back = encode(values, mdt)
    nan = np.isnan(values)
    np.testing.assert_array_equal(back[~nan], codes[~nan])
    assert set((back[nan] & 0x7F).tolist()) == {0x7F}


def test_saturation_rules():
    e4, e5 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    assert [float(v) for v in to_float8(np.float32([500, -1e9, np.inf, -np.inf]), e4)] == [448, -448, 448, -448]
    assert [float(v) for v in to_float8(np.float32([61439.99, 61440, np.inf, -1e9]), e5)] == \
        [57344, np.inf, np.inf, -np.inf]
    assert np.isnan(float(to_float8(np.float32(np.nan), e4)))
    assert to_float8(np.float32(-0.0), e4).view(np.uint8) == 0x80


def test_convert_into_fp8_uses_the_torch_rule():
    """values.convert is what every interpreter cast, constant and store into fp8 goes through;
    numpy's own cast (ml_dtypes) would give NaN for an e4m3 overflow."""
    x = np.float32([1000.0, 3.3])
    got = convert(x, np.dtype(ml_dtypes.float8_e4m3fn))
    assert got.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert [float(v) for v in got] == [448.0, 3.25]
    assert np.isnan(float(x.astype(ml_dtypes.float8_e4m3fn)[0]))  # why the rule is ours
    assert convert(np.float32(2.5), np.dtype(np.float16)) == np.float16(2.5)
