import random

import numpy as np
import pytest

from tpdisc.random_draws import integer_below

BOUNDS = (1, 2, 3, 5, 7, 64, 100, 150, 9999, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 5, 2**40)


def same_state(a: np.random.Generator, b: np.random.Generator) -> bool:
    return a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("n", BOUNDS)
def test_the_number_numpy_draws(n: int) -> None:
    a, b = np.random.default_rng(n), np.random.default_rng(n)
    for _ in range(500):
        assert integer_below(b, n) == int(a.integers(n))
    assert same_state(a, b)


def test_the_same_stream_between_other_draws() -> None:
    # integers' 32-bit draws use half of a 64-bit output and keep the other half for the
    # next: random() and 64-bit bounds between them must find the stream as numpy leaves it
    pick = random.Random(7)
    for seed in range(200):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        for _ in range(30):
            if pick.random() < 0.3:
                assert a.random() == b.random()
            else:
                n = pick.choice(BOUNDS)
                assert integer_below(b, n) == int(a.integers(n))
        assert same_state(a, b)


def test_a_single_value_draws_nothing() -> None:
    a, b = np.random.default_rng(1), np.random.default_rng(1)
    assert integer_below(b, 1) == 0
    assert same_state(a, b)


def test_a_rejected_draw_is_drawn_again() -> None:
    # n just above 2**31: about half of the 32-bit values fall under the threshold
    n = 2**31 + 1
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    values = [integer_below(b, n) for _ in range(200)]
    assert values == [int(a.integers(n)) for _ in range(200)]
    assert same_state(a, b)


def test_a_numpy_bound_draws_as_an_int_does() -> None:
    n = np.int64(2**32 - 1)  # as an int64, the draw times the bound would overflow
    a, b = np.random.default_rng(4), np.random.default_rng(4)
    assert [integer_below(b, n) for _ in range(100)] == [int(a.integers(n)) for _ in range(100)]
