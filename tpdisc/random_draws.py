"""A draw of numpy's ``Generator`` for less: the same number from the same stream.

Games draw a bounded integer at every step of every agent, and numpy's
``Generator.integers`` spends most of its 2 µs checking and converting its arguments.
:func:`integer_below` takes the same 32-bit values from the generator's bit generator,
through its ``ctypes`` interface, and reduces them as numpy's C code does (Lemire's
method): half the cost, the same number (``tests/test_random_draws.py`` checks it against
numpy's over many bounds, between other draws). Bounds beyond 32 bits are left to numpy.

(Distinct numbers, ``Generator.choice(n, size=k, replace=False)``, cost 15–25 µs, most of
it numpy's argument handling too; drawing them the same way from Python, Floyd's algorithm
and the shuffle, costs as much: they are left to numpy.)

Unlike numpy's method it does not take the bit generator's lock: a generator here
belongs to one game, which runs in one thread.
"""

from __future__ import annotations

import operator

import numpy as np

_LOW32 = 0xFFFFFFFF


def integer_below(rng: np.random.Generator, n: int) -> int:
    """``int(rng.integers(n))``: the same number, and the generator left in the same state."""
    n = operator.index(n)  # a numpy integer would overflow in the product below
    if n == 1:  # numpy returns the only value without drawing
        return 0
    if not 1 < n <= 1 << 32:
        return int(rng.integers(n))
    # numpy's buffered_bounded_lemire_uint32 (for n == 2**32: the 32 bits as drawn)
    bits = rng.bit_generator.ctypes
    next_uint32, state = bits.next_uint32, bits.state
    m = next_uint32(state) * n
    low = m & _LOW32
    if low < n:
        threshold = (_LOW32 - (n - 1)) % n
        while low < threshold:
            m = next_uint32(state) * n
            low = m & _LOW32
    return int(m >> 32)
