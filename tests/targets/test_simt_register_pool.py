"""The simulator's setmaxnreg pool (simt_hopper.Hopper.set_registers) under roles that reach their first
setmaxnreg at once: the pool is made under the block's lock, so neither role's count is lost. (It was made
before the lock: two roles could each make one, the later one's dropping the other's decrease, and the
consumers' increase then waited for registers the producer had already given back: a false "simulated
deadlock" seen once under load in a full run.)"""

import threading
import time

import numpy as np

from tilec.targets.interp import simt_hopper


def test_roles_making_the_pool_at_once_keep_both_counts(monkeypatch):
    hopper = simt_hopper.Hopper(np.zeros(64, np.uint8))
    real_full = np.full

    def slow_full(*args, **kwargs):  # widen the window between the check and the assignment
        time.sleep(0.05)
        return real_full(*args, **kwargs)

    monkeypatch.setattr(simt_hopper.np, "full", slow_full)
    block = 512
    producer = np.zeros(block, bool)
    producer[384:] = True
    consumer = np.zeros(block, bool)
    consumer[:128] = True
    roles = [threading.Thread(target=hopper.set_registers, args=(None, lanes, count, False))
             for lanes, count in ((producer, 32), (consumer, 120))]
    for t in roles:
        t.start()
    for t in roles:
        t.join()
    held = hopper.lane_registers
    assert (held[384:] == 32).all() and (held[:128] == 120).all() and (held[128:384] == 128).all()
