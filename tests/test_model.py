"""The typed model: `weanj.Param`, `weanj.Array`, `weanj.Example` and `weanj.Variant` —
their definitions, their short reprs, and the one argument check of every direct call of
a variant's `loss`/`grad`/`jvp` (arguments by position or keyword, then the example's
`validate`)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

import weanj

from .helpers import TYPED, registered_typed, typed_arrays, typed_gradient

# --- the notebook API checks what the command line checks ----------------------------


@pytest.mark.parametrize(
    "args, words",
    [
        (lambda t, o: (t, o, 0), "K must be at least 1, got 0"),
        (lambda t, o: (t, o, 2**31), "K must be at most 2147483647"),
        (lambda t, o: (t, o, 3.0), "K must be an integer, got 3.0"),
        (lambda t, o: (t, o, True), "K must be an integer, got True"),
        (lambda t, o: (t, o, "3"), "K must be an integer, got '3'"),
        (lambda t, o: (t, o[:4, :4], 3), "uobs has shape (4, 4)"),
        (lambda t, o: (t, o.astype(np.float32), 3), "mix float32 and float64"),
        (lambda t, o: (t.astype(int), o, 3), "theta has dtype int64; expected float64 or float32"),
        (lambda t, o: (t > 0, o, 3), "theta has dtype bool; expected float64 or float32"),
        (lambda t, o: (t + 0j, o, 3), "theta has dtype complex128; expected float64 or float32"),
        (lambda t, o: (t.astype(np.float16), o, 3), "theta has dtype float16"),
        (lambda t, o: (t.tolist(), o, 3), "theta must be an array (numpy or JAX), got list"),
        (lambda t, o: (None, o, 3), "theta must be an array (numpy or JAX), got NoneType"),
        (lambda t, o: (t, "uobs", 3), "uobs must be an array (numpy or JAX), got str"),
        (lambda t, o: (np.zeros((0, 0)), np.zeros((0, 0)), 3), "theta is empty (shape (0, 0))"),
        (lambda t, o: (t[0], o[0], 3), "theta has shape (5,); expected (n, n)"),
        (lambda t, o: (t, o), "takes 3 arguments (theta, uobs, K), got 2"),
        (lambda t, o: (t, o, 3, 4), "takes 3 arguments (theta, uobs, K), got 4"),
    ],
    ids=[
        "K-zero",
        "K-too-large",
        "K-float",
        "K-bool",
        "K-text",
        "shapes",
        "mixed-dtypes",
        "int-array",
        "bool-array",
        "complex-array",
        "float16",
        "list",
        "none",
        "text",
        "empty",
        "1-d",
        "arity-2",
        "arity-4",
    ],
)
def test_variant_calls_are_checked_before_they_run(args, words):
    # .grad(θ, uobs, 0) used to return an all-zero gradient, wrong shapes a raw JAX error.
    rng = np.random.default_rng(0)
    theta, uobs = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    v = weanj.variant("01-jacobi", "jax-jacobi")
    for fn in (v.loss, v.grad, v.grad.lower):
        with pytest.raises(weanj.InputError) as raised:
            fn(*args(theta, uobs))
        message = str(raised.value)
        assert words in message and "jax-jacobi" in message and "\n" not in message


def test_checked_calls_accept_jax_arrays_numpy_scalars_and_float32():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    theta, uobs = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    v = weanj.variant("01-jacobi", "jax-jacobi")
    reference = float(v.loss(theta, uobs, 3))
    with jax.enable_x64(True):  # JAX arrays of float64 (the session's default is float32)
        theta_jax, uobs_jax = jnp.asarray(theta), jnp.asarray(uobs)
    assert float(v.loss(theta_jax, uobs_jax, np.int64(3))) == reference
    g32 = v.grad(theta.astype(np.float32), uobs.astype(np.float32), 3)
    assert g32.dtype == np.float32
    g64 = np.asarray(v.grad(theta, uobs, 3))
    np.testing.assert_allclose(np.asarray(g32), g64, rtol=0, atol=1e-5 * np.abs(g64).max())
    assert weanj.example("01-jacobi").check_call("x", (theta, uobs, 3)) == "float64"
    assert weanj.example("01-jacobi").check_call(
        "x", (theta.astype("f4"), uobs.astype("f4"), 3)
    ) == ("float32")


# --- typed parameters ---------------------------------------------------------------


def test_param_kinds_and_default_ranges():
    K, nu, flag = weanj.Param("K", 3), weanj.Param("nu", 0.5), weanj.Param("flag", True)
    assert (K.kind, K.minimum, K.maximum) == ("int", 1, 2**31 - 1)
    assert (nu.kind, nu.minimum, nu.maximum) == ("float", -np.inf, np.inf)
    assert (flag.kind, flag.minimum, flag.maximum) == ("bool", None, None)
    assert weanj.Param("T", 2, kind="float").default == 2.0  # an int default, kind float
    assert type(weanj.Param("T", 2, kind="float").default) is float
    assert K.range_text == "1 <= int <= 2147483647" and nu.range_text == "float"
    assert weanj.Param("nu", 0.5, minimum=0, maximum=1).range_text == "0 <= float <= 1"


@pytest.mark.parametrize(
    "param, value, expected",
    [
        (weanj.Param("K", 3), 5, 5),
        (weanj.Param("K", 3), np.int32(5), 5),
        (weanj.Param("K", 3), np.array(7), 7),
        (weanj.Param("K", 3), 2**31 - 1, 2**31 - 1),
        (weanj.Param("nu", 0.5), 2, 2.0),
        (weanj.Param("nu", 0.5), np.float32(0.25), 0.25),
        (weanj.Param("nu", 0.5), -1e300, -1e300),
        (weanj.Param("flag", True), False, False),
        (weanj.Param("flag", True), np.bool_(True), True),
        # 0-d arrays (what h5py and numpy reductions return) are their one value
        (weanj.Param("nu", 0.5), np.array(0.25), 0.25),
        (weanj.Param("flag", True), np.array(False), False),
    ],
)
def test_param_check_accepts(param, value, expected):
    checked = param.check(value)
    assert (
        checked == expected
        and type(checked) is {"int": int, "float": float, "bool": bool}[param.kind]
    )


@pytest.mark.parametrize(
    "param, value, words",
    [
        (weanj.Param("K", 3), 3.0, "K must be an integer, got 3.0"),
        (weanj.Param("K", 3), np.float64(3.0), "K must be an integer, got"),
        (weanj.Param("K", 3), True, "K must be an integer, got True"),
        (weanj.Param("K", 3), np.array(3.0), "K must be an integer, got"),
        (weanj.Param("K", 3), np.array([3]), "K must be an integer, got array([3])"),
        (weanj.Param("K", 3), "3", "K must be an integer, got '3'"),
        (weanj.Param("K", 3), None, "K must be an integer, got None"),
        (weanj.Param("K", 3), 0, "K must be at least 1, got 0"),
        (weanj.Param("K", 3), 2**31, "K must be at most 2147483647 (the kernels' loop counters"),
        (weanj.Param("K", 3, minimum=2, maximum=9), 10, "K must be at most 9, got 10"),
        (weanj.Param("nu", 0.5), float("nan"), "nu must be a finite number, got nan"),
        (weanj.Param("nu", 0.5), float("inf"), "nu must be a finite number, got inf"),
        (weanj.Param("nu", 0.5), -np.inf, "nu must be a finite number, got -inf"),
        (weanj.Param("nu", 0.5), True, "nu must be a finite number, got True"),
        (weanj.Param("nu", 0.5), "0.5", "nu must be a finite number, got '0.5'"),
        (weanj.Param("nu", 0.5, minimum=0.0, maximum=1.0), 1.5, "nu must be at most 1, got 1.5"),
        (weanj.Param("nu", 0.5, minimum=0.0), -0.1, "nu must be at least 0, got -0.1"),
        (weanj.Param("flag", True), 1, "flag must be true or false, got 1"),
        (weanj.Param("flag", True), 0.0, "flag must be true or false, got 0.0"),
        (weanj.Param("flag", True), "true", "flag must be true or false, got 'true'"),
    ],
    ids=lambda v: str(v)[:20] if not isinstance(v, weanj.Param) else v.name,
)
def test_param_check_refuses(param, value, words):
    with pytest.raises(weanj.InputError) as raised:
        param.check(value)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_param_parse_reads_command_line_words():
    K, nu, flag = weanj.Param("K", 3), weanj.Param("nu", 0.5), weanj.Param("flag", True)
    assert K.parse("5") == 5 and K.parse(" 7 ") == 7 and type(K.parse("5")) is int
    assert nu.parse("1e-3") == 1e-3 and nu.parse("2") == 2.0 and type(nu.parse("2")) is float
    for word in ("true", "TRUE", "1", "yes", "on"):
        assert flag.parse(word) is True, word
    for word in ("false", "False", "0", "no", "off"):
        assert flag.parse(word) is False, word
    for param, word, words in [
        (K, "3.0", "--K takes an integer, got '3.0'"),
        (K, "abc", "--K takes an integer, got 'abc'"),
        (K, "", "--K takes an integer, got ''"),
        (K, "0", "K must be at least 1, got 0"),
        (K, str(2**31), "K must be at most 2147483647"),
        (nu, "abc", "--nu takes a number, got 'abc'"),
        (nu, "nan", "nu must be a finite number, got nan"),
        (nu, "-inf", "nu must be a finite number, got -inf"),
        (flag, "maybe", "--flag takes true or false, got 'maybe'"),
        (flag, "2", "--flag takes true or false, got '2'"),
    ]:
        with pytest.raises(weanj.InputError) as raised:
            param.parse(word)
        assert words in str(raised.value), (word, str(raised.value))


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: weanj.Param("x", "text"), "kind must be int, float or bool"),
        (lambda: weanj.Param("x", None), "kind must be int, float or bool"),
        (lambda: weanj.Param("1x", 3), "must be a Python identifier"),
        (lambda: weanj.Param("K", 3, minimum=5), "K must be at least 5, got 3"),
        (lambda: weanj.Param("K", 3, maximum=2**31), "maximum <= 2147483647"),
        (lambda: weanj.Param("K", 3, minimum=1.5), "need int minimum"),
        (lambda: weanj.Param("nu", 0.5, minimum=1.0, maximum=0.0), "need minimum <= maximum"),
        (lambda: weanj.Param("nu", float("nan")), "nu must be a finite number"),
        (lambda: weanj.Param("flag", True, minimum=0), "a bool parameter has no range"),
        (lambda: weanj.Param("K", 3, kind="str"), "kind must be int, float or bool"),
        (lambda: weanj.Param("K", 3, sweep=(1, 2.5)), "K must be an integer, got 2.5"),
        (lambda: weanj.Param("K", 3, bench=0), "K must be at least 1"),
    ],
    ids=[
        "text",
        "none",
        "name",
        "default-range",
        "max-int32",
        "int-bound",
        "float-range",
        "nan",
        "bool-range",
        "kind",
        "sweep",
        "bench",
    ],
)
def test_param_definitions_are_checked(make, words):
    with pytest.raises(weanj.DefinitionError) as raised:
        make()
    assert words in str(raised.value)


# --- typed arrays ---------------------------------------------------------------------


def test_array_declarations():
    assert weanj.Array("x") == weanj.Array("x", "float", None, False, None)
    assert weanj.Array("pos", shape=("P", 2)).shape == ("P", 2)
    assert weanj.Array("s", shape=()).shape == ()
    assert weanj.Array("v", shape="n").shape == ("n",)  # one symbol: a 1-d array
    assert weanj.Array("i", "int", dtype=np.int16).dtype == "int16"
    assert weanj.Array("i", "int", index=True, shape=("m",)).describe() == "i: int index (m,)"
    assert weanj.Array("c", "int", dtype="int32", shape=("m",)).describe() == "c: int32 (m,)"
    assert weanj.Array("s", shape=()).describe() == "s: float ()"
    assert weanj.Array("pos", shape=("P", 2)).describe() == "pos: float (P, 2)"
    assert [weanj.Array("a", k).differentiable for k in ("float", "complex", "int", "bool")] == [
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"name": "1x"}, "must be a Python identifier"),
        ({"name": "x", "kind": "double"}, "kind must be one of float, complex, int, bool"),
        ({"name": "x", "index": True}, "index=True needs kind='int'"),
        ({"name": "x", "kind": "bool", "index": True}, "index=True needs kind='int'"),
        ({"name": "x", "dtype": "float32"}, "dtype= names the integer dtype of an int array"),
        ({"name": "x", "kind": "int", "dtype": "float64"}, "dtype= names the integer dtype"),
        ({"name": "x", "kind": "int", "dtype": "nonsense"}, "dtype= names the integer dtype"),
        ({"name": "x", "shape": (-1,)}, "shape must be a tuple of ints >= 0 and symbols"),
        ({"name": "x", "shape": (True,)}, "shape must be a tuple of ints >= 0 and symbols"),
        ({"name": "x", "shape": ("a b",)}, "shape must be a tuple of ints >= 0 and symbols"),
        ({"name": "x", "shape": (2.0,)}, "shape must be a tuple of ints >= 0 and symbols"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_array_definitions_are_checked(kwargs, words):
    with pytest.raises(weanj.DefinitionError) as raised:
        weanj.Array(**kwargs)
    assert words in str(raised.value)


def test_array_values_are_kept_or_cast_only_where_nothing_is_lost():
    float_array, complex_array = weanj.Array("x"), weanj.Array("z", "complex")
    any_int, int32 = weanj.Array("i", "int"), weanj.Array("c", "int", dtype="int32")
    flags = weanj.Array("b", "bool")
    f32 = np.array([0.1, 0.2], dtype=np.float32)
    assert float_array.stored(f32, "w").dtype == np.float64
    np.testing.assert_array_equal(float_array.stored(f32, "w"), f32.astype(np.float64))
    assert complex_array.stored(np.array([1.0, 2.0]), "w").dtype == np.complex128
    assert any_int.stored(np.array([1, 2], dtype=np.int16), "w").dtype == np.int16  # kept
    assert any_int.stored(np.array([1, 2], dtype=np.uint8), "w").dtype == np.uint8
    assert int32.stored(np.array([1, 2], dtype=np.int32), "w").dtype == np.int32
    assert flags.stored(np.array([True, False]), "w").dtype == bool
    assert float_array.stored(np.array(2.5), "w").shape == ()  # 0-d stays 0-d
    for spec, value, words in [
        (
            float_array,
            np.array([1 + 2j]),
            "x has dtype complex128, but the example declares it float",
        ),
        (float_array, np.array([1, 2]), "declare it weanj.Array(name, kind='int')"),
        (float_array, np.array([True]), "declare it weanj.Array(name, kind='bool')"),
        (int32, np.array([1, 2]), "c has dtype int64, but the example declares it int (int32)"),
        (any_int, np.array([1.0]), "i has dtype float64"),
        (flags, np.array([0, 1]), "b has dtype int64"),
        (complex_array, np.array([1, 2]), "z has dtype int64"),
        (float_array, np.array([1.0, np.nan]), "x has 1 NaN/Inf value(s), the first at numpy (1)"),
        (float_array, [1.0, 2.0], "w: x must be an array (numpy or JAX), got list"),
        (float_array, np.array(["a"]), "expected numbers or booleans"),
    ]:
        with pytest.raises(weanj.InputError) as raised:
            spec.stored(value, "w")
        assert words in str(raised.value), str(raised.value)
    # A run in float32: float and complex arrays follow the dtype under test, others stay.
    assert float_array.for_run(np.zeros(2), "float32").dtype == np.float32
    assert complex_array.for_run(np.zeros(2, complex), "float32").dtype == np.complex64
    assert int32.for_run(np.zeros(2, np.int32), "float32").dtype == np.int32


# --- examples -------------------------------------------------------------------------


def _example(**overrides):
    fields = dict(name="91-model", arrays=("x",), wrt="x", generate=lambda seed: {})
    fields.update(overrides)
    return weanj.Example(**fields)


def test_example_merges_shapes_into_its_arrays():
    ex = _example(
        arrays=("pos", "q", weanj.Array("w")), wrt="q", shapes={"pos": ("P", 2), "q": ("P",)}
    )
    assert [a.shape for a in ex.specs] == [("P", 2), ("P",), None]
    assert ex.arrays == ("pos", "q", "w") and ex.symbols == ("P",)
    assert ex.check_shapes({"pos": (7, 2), "q": (7,), "w": (3, 3)}) == {"P": 7}
    with pytest.raises(
        weanj.InputError, match=r"q has shape \(6,\), pos's shape \(7, 2\) gives P = 7"
    ):
        ex.check_shapes({"pos": (7, 2), "q": (6,), "w": ()})
    # An Array's own shape and `shapes=` must agree.
    same = _example(arrays=(weanj.Array("x", shape=("n",)),), shapes={"x": ("n",)})
    assert same.specs[0].shape == ("n",)
    with pytest.raises(weanj.DefinitionError, match="x has shape"):
        _example(arrays=(weanj.Array("x", shape=("n",)),), shapes={"x": ("m",)})
    with pytest.raises(weanj.DefinitionError, match="shapes names arrays"):
        _example(shapes={"y": ("n",)})
    # The built-in deposition example declares its shapes so.
    dep = weanj.example("05-deposition")
    assert dep.array("pos").shape == ("P", 2) and dep.array("q").shape == ("P",)


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"arrays": (weanj.Array("i", "int"),), "wrt": "i"}, "wrt names i, a int array"),
        ({"arrays": (weanj.Array("b", "bool"),), "wrt": "b"}, "wrt names b, a bool array"),
        ({"wrt": "y"}, "wrt='y' must name one or several distinct arrays"),
        ({"wrt": ("x", "x")}, "must name one or several distinct arrays"),
        ({"wrt": ()}, "must name one or several distinct arrays"),
        ({"arrays": ("x", "x")}, "array names must be distinct"),
        ({"arrays": ("x", 3)}, "arrays must be names or weanj.Array objects"),
        ({"params": (weanj.Param("x", 1),)}, "repeat or clash with arrays"),
        ({"params": ("K",)}, "params must be weanj.Param objects"),
        ({"name": "../x"}, "example name '../x' must start with a letter or digit"),
        ({"taylor": {"y": weanj.TaylorPolicy()}}, "taylor must be a weanj.TaylorPolicy"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_example_definitions_are_checked(overrides, words):
    with pytest.raises(weanj.DefinitionError) as raised:
        _example(**overrides)
    assert words in str(raised.value)


def test_complex_arrays_are_differentiable():
    ex = _example(arrays=(weanj.Array("z", "complex"), weanj.Array("i", "int")), wrt="z")
    assert ex.wrt_names == ("z",)


# --- the argument check of a typed example's variant ----------------------------------


@pytest.fixture
def typed(project):
    """`helpers.typed_example` with one JAX variant, registered for this test."""
    with registered_typed(variant=True) as ex:
        yield ex


def _typed_args(arrays=None, **params):
    arrays = arrays or typed_arrays(2)
    values = {"S": 3, "nu": 0.25, "upwind": True, **params}
    names = ("x", "z", "idx", "mask", "s", "counts")
    return tuple(arrays[n] for n in names) + (values["S"], values["nu"], values["upwind"])


def test_a_typed_variant_computes_with_every_kind(typed):
    v = weanj.variant(TYPED, "jax-typed")
    arrays = typed_arrays(2)
    for upwind in (True, False):
        expected = typed_gradient(arrays, 3, 0.25, upwind)
        c = 2.0 if upwind else 1.0
        loss = c * 3 * 0.25 * np.sum(arrays["counts"] * arrays["x"][arrays["idx"]] ** 2)
        loss += arrays["s"] * np.sum(np.abs(arrays["z"][arrays["mask"]]) ** 2)
        assert float(v.loss(*_typed_args(arrays, upwind=upwind))) == pytest.approx(loss, rel=1e-14)
        g = v.grad(*_typed_args(arrays, upwind=upwind))
        assert set(g) == {"x", "z"} and g["z"].dtype == np.complex128
        np.testing.assert_allclose(np.asarray(g["x"]), expected["x"], rtol=1e-14, atol=0)
        np.testing.assert_allclose(np.asarray(g["z"]), expected["z"], rtol=1e-14, atol=0)
    f32 = dict(
        arrays,
        x=arrays["x"].astype(np.float32),
        z=arrays["z"].astype(np.complex64),
        s=arrays["s"].astype(np.float32),
    )
    g32 = v.grad(*_typed_args(f32))
    assert g32["x"].dtype == np.float32 and g32["z"].dtype == np.complex64
    assert typed.check_call("jax-typed", _typed_args(f32)) == "float32"


@pytest.mark.parametrize(
    "change, params, words",
    [
        ({"idx": np.zeros(4)}, {}, "idx has dtype float64; expected an integer dtype"),
        ({"counts": np.ones(4, dtype=np.int64)}, {}, "counts has dtype int64; expected int32"),
        ({"mask": np.ones(6, dtype=np.int8)}, {}, "mask has dtype int8; expected bool"),
        ({"z": np.ones(6)}, {}, "z has dtype float64; expected complex128 or complex64"),
        ({"x": np.ones(6, dtype=np.float32)}, {}, "the arrays mix float32 and float64"),
        ({"z": np.ones(6, dtype=np.complex64)}, {}, "the arrays mix float32 and float64"),
        ({"s": np.ones(1)}, {}, "s has shape (1,); expected ()"),
        ({"z": np.ones(5, dtype=complex)}, {}, "z has shape (5,), x's shape (6,) gives n = 6"),
        ({"x": np.ones(0), "z": np.ones(0, complex), "mask": np.ones(0, bool)}, {}, "x is empty"),
        ({"idx": [0, 1, 2, 3]}, {}, "idx must be an array (numpy or JAX), got list"),
        ({}, {"S": 3.0}, "S must be an integer, got 3.0"),
        ({}, {"S": 10}, "S must be at most 9, got 10"),
        ({}, {"nu": float("nan")}, "nu must be a finite number, got nan"),
        ({}, {"nu": -1.0}, "nu must be at least 0, got -1"),
        ({}, {"upwind": 1}, "upwind must be true or false, got 1"),
    ],
    ids=lambda v: str(v)[:24],
)
def test_typed_variant_calls_are_checked(typed, change, params, words):
    v = weanj.variant(TYPED, "jax-typed")
    args = _typed_args({**typed_arrays(2), **change}, **params)
    for fn in (v.loss, v.grad):
        with pytest.raises(weanj.InputError) as raised:
            fn(*args)
        message = str(raised.value)
        assert words in message and message.startswith("jax-typed") and "\n" not in message


# --- direct calls: by keyword, checked, validated -------------------------------------------


def _gauss_seidel_arrays(n=6, seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))


def test_a_variant_takes_its_parameters_and_arrays_by_keyword():
    v = weanj.variant("02-gauss-seidel", "jax-lex")
    theta, uobs = _gauss_seidel_arrays()
    by_position = float(v.loss(theta, uobs, 5))
    assert float(v.loss(theta, uobs, K=5)) == by_position
    assert float(v.loss(theta=theta, uobs=uobs, K=5)) == by_position
    assert float(v.loss(uobs=uobs, K=5, theta=theta)) == by_position
    assert float(v.loss(theta, uobs, K=4)) != by_position  # K is really passed
    np.testing.assert_array_equal(np.asarray(v.grad(theta, uobs, K=5)), v.grad(theta, uobs, 5))
    dx = {"theta": np.random.default_rng(4).standard_normal(theta.shape)}
    assert float(v.jvp(theta, uobs, K=5, tangents=dx)) == float(v.jvp(theta, uobs, 5, dx))
    # A 0-d array or a numpy integer is an int parameter's value (Param.check), passed on as
    # the int: it used to reach jax.jit as an unhashable static argument (a raw ValueError).
    assert float(v.loss(theta, uobs, np.array(5))) == by_position
    assert float(v.loss(theta, uobs, K=np.int32(5))) == by_position
    for args, kwargs, words in [
        ((theta, uobs, 5), {"K": 5}, "jax-lex: K is given twice (by position and by keyword)"),
        ((theta, uobs), {"Q": 5}, "jax-lex has no argument 'Q' (its arguments: theta, uobs, K)"),
        ((theta,), {"K": 5}, "jax-lex: missing argument(s) uobs"),
        ((theta, uobs, 5, 6), {"K": 1}, "jax-lex takes 3 arguments (theta, uobs, K), got 4 and 1"),
        ((theta, uobs), {"K": np.array(5.0)}, "jax-lex: K must be an integer, got"),
    ]:
        for fn in (v.loss, v.grad):
            with pytest.raises(weanj.InputError) as raised:
                fn(*args, **kwargs)
            assert str(raised.value).startswith(words) and "\n" not in str(raised.value)


def test_a_direct_call_is_checked_and_validated_as_an_inputs_file_is():
    """A wrong shape is refused before anything runs; so are arrays of the right shapes
    that the example's `validate` refuses (|u| > 1 breaks 03-advection's CFL condition),
    which a direct call used to run on."""
    theta, uobs = _gauss_seidel_arrays()
    lex = weanj.variant("02-gauss-seidel", "jax-lex")
    for fn in (lex.loss, lex.grad):
        with pytest.raises(weanj.InputError) as raised:
            fn(theta, uobs[:4, :4], 5)
        assert str(raised.value).startswith("jax-lex: uobs has shape (4, 4)")
        assert "\n" not in str(raised.value)
    ex = weanj.example("03-advection")
    d = weanj.load_inputs("03-advection")
    muscl = weanj.variant(ex, "jax-muscl")
    assert np.isfinite(float(muscl.loss(*(d[a] for a in ex.arrays), d["T"])))
    u = d["u"].copy()
    u[2, 3] = 1.5
    args = tuple(u if a == "u" else d[a] for a in ex.arrays) + (d["T"],)
    for fn in (muscl.loss, muscl.grad):
        with pytest.raises(weanj.InputError) as raised:
            fn(*args)
        assert str(raised.value) == (
            "jax-muscl: |u| must be <= 1 everywhere (CFL with λ = 0.25), got max|u| = 1.5"
        )
    assert muscl.loss.lower(*args) is not None  # lowering reads no values: nothing to validate


def test_variants_and_examples_show_themselves_in_one_short_line():
    v = weanj.variant("02-gauss-seidel", "jax-lex")
    assert repr(v) == "Variant('jax-lex', example='02-gauss-seidel', family='lex')"
    assert repr(v.example) == (
        "Example('02-gauss-seidel', arrays=('theta', 'uobs'), wrt='theta', params=(K=20))"
    )
    ex = weanj.example("05-deposition")
    assert "\n" not in repr(ex) and len(repr(ex)) < 200 and repr(ex).startswith("Example(")
    assert "generate" not in repr(ex) and "function" not in repr(ex)  # no dataclass dump
    typed = weanj.Example(name="91-model", arrays=("x",), wrt="x", generate=lambda seed: {})
    assert repr(typed) == "Example('91-model', arrays=('x',), wrt='x')"


# --- parameters named like the command line's options ----------------------------------------


def _identifier_options() -> set[str]:
    """Every `--NAME` of weanj's parser and its subcommands whose NAME could be a
    parameter's (a Python identifier)."""
    from weanj._cli._parser import build_parser, options_of

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        o[2:]
        for p in (parser, *sub.choices.values())
        for o in options_of(p)
        if o[2:].isidentifier()
    }


def test_reserved_names_hold_every_option_of_every_command():
    from weanj._model._params import RESERVED_NAMES

    options = _identifier_options()
    assert {"timeout", "dtype", "out", "inputs", "variants", "over", "help", "version"} <= options
    assert options <= RESERVED_NAMES, sorted(options - RESERVED_NAMES)


@pytest.mark.parametrize("name", ["timeout", "dtype", "out"])
def test_a_parameter_named_like_an_option_is_refused_when_the_example_registers(name):
    """`--timeout 30` on the command line would set weanj's option, never the parameter."""
    before = weanj.example_names()
    with pytest.raises(weanj.DefinitionError) as raised:
        weanj.register_example(
            weanj.Example(
                name="93-clash",
                arrays=("x",),
                wrt="x",
                generate=lambda seed: {"x": np.ones(3)},
                params=(weanj.Param(name, 3),),
            )
        )
    assert str(raised.value) == (
        f"parameter name {name!r} is one of weanj's own command-line options (--{name}); "
        "choose another name"
    )
    assert weanj.example_names() == before


def test_every_reserved_name_is_refused_and_others_are_not():
    from weanj._model._params import RESERVED_NAMES

    for name in sorted(RESERVED_NAMES):
        with pytest.raises(weanj.DefinitionError, match=f"--{name}"):
            weanj.Param(name, 1)
    for name in ("T", "D", "Timeout", "dt", "outer"):  # a parameter may be set as --NAME
        assert weanj.Param(name, 1).name == name


def test_a_module_declaring_such_a_parameter_is_one_error_naming_it(tmp_path, monkeypatch):
    from .projects import import_failure

    body = (
        "import numpy as np, weanj\n"
        "weanj.register_example(weanj.Example(name='93-clash', arrays=('x',), wrt='x',\n"
        "    generate=lambda s: {'x': np.ones(3)}, params=(weanj.Param('timeout', 30),)))\n"
    )
    message = import_failure(tmp_path, monkeypatch, "clash_timeout", body)
    assert "parameter name 'timeout' is one of weanj's own command-line options" in message
