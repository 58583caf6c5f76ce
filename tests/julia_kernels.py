"""weanj's Julia kernels (`julia/src/`), generic over the element type, transliterated
line by line into Python on the numbers of tests/julia_numbers.py: each function names
the Julia function it follows (by its name, `!` dropped), in the same order of
operations, with 1-based indices. A transliteration is a reading of the Julia code, not a
run of it (tests/test_julia_generic_kernels.py says what is checked with it). `LOSSES`:
every exported loss; `WITH_OUTPUTS`: the kernels that return outputs beside their loss;
`julia_loss`, `julia_outputs`: a fixture's loss and outputs on arrays by name.
"""

from __future__ import annotations

from .julia_numbers import (
    JArray,
    accumulator_type,
    convert,
    copyto,
    floor_int,
    minimum2,
    promote_type,
    sign,
    similar,
    square,
    type_of,
    zero,
    zeros,
)

# --- poisson.jl, jacobi.jl, gauss_seidel.jl ---------------------------------------------


def grid_h2(T, n: int):
    return convert(T, 1 / (n + 1) ** 2)  # `T(1 / (n + 1)^2)`: a Float64, rounded once


def zero_grid(theta: JArray) -> JArray:
    return zeros(theta.T, theta.size(1) + 2, theta.size(2) + 2)


def poisson_update(u, theta, h2, i, j):
    source = h2 * theta[i - 1, j - 1]
    return (source + u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) / 4


def poisson_sweep(unew, u, theta, h2):
    n = theta.size(1)
    for j in range(2, n + 2):
        for i in range(2, n + 2):
            unew[i, j] = poisson_update(u, theta, h2, i, j)
    return unew


def misfit(u: JArray, uobs: JArray):
    T = promote_type(u.T, uobs.T)
    S = accumulator_type(T)
    n = uobs.size(1)
    s = zero(S)
    for j in range(2, n + 2):
        for i in range(2, n + 2):
            r = u[i, j] - uobs[i - 1, j - 1]
            s = s + square(convert(S, r))
    return convert(T, s)


def poisson_loss(solve, theta, uobs, K):
    return misfit(solve(theta, K), uobs)


def jacobi_solve(theta, K):
    h2 = grid_h2(theta.T, theta.size(1))
    u, unew = zero_grid(theta), zero_grid(theta)
    for _ in range(K):
        poisson_sweep(unew, u, theta, h2)
        u, unew = unew, u
    return u


def in_place_solve(sweep, theta, K):
    h2 = grid_h2(theta.T, theta.size(1))
    u = zero_grid(theta)
    for _ in range(K):
        sweep(u, theta, h2)
    return u


def half_sweep(u, theta, h2, red: bool):
    n = theta.size(1)
    for j in range(2, n + 2):
        for i in range(2, n + 2):
            if ((i + j) % 2 == 0) == red:
                u[i, j] = poisson_update(u, theta, h2, i, j)
    return u


def rb_sweep(u, theta, h2):
    half_sweep(u, theta, h2, True)
    return half_sweep(u, theta, h2, False)


def jacobi_loss(theta, uobs, K):
    return poisson_loss(jacobi_solve, theta, uobs, K)


def lex_loss(theta, uobs, K):
    return poisson_loss(
        lambda th, k: in_place_solve(lambda u, t, h2: poisson_sweep(u, u, t, h2), th, k),
        theta,
        uobs,
        K,
    )


def rb_loss(theta, uobs, K):
    return poisson_loss(lambda th, k: in_place_solve(rb_sweep, th, k), theta, uobs, K)


# --- advection.jl ---------------------------------------------------------------------------


def minmod(a, b):
    if a * b <= 0:
        return zero(type_of(a))
    if abs(a) <= abs(b):
        return a
    return b


def minmod_minmax(a, b):
    R = type_of(a)
    return convert(R, 1 / 2) * (sign(a) + sign(b)) * minimum2(abs(a), abs(b))


def face_flux(w, chere, cnext, shere, snext):
    R = type_of(chere)
    lam, half = convert(R, 1 / 4), convert(R, 1 / 2)
    if w >= 0:
        return w * (chere + half * (1 - lam * w) * shere)
    return w * (cnext - half * (1 + lam * w) * snext)


def mod1(i: int, n: int) -> int:
    return (i - 1) % n + 1


def muscl_step(cnew, c, u, v, sx, sy, F, G, limiter):
    n = c.size(1)
    lam = convert(c.T, 1 / 4)
    for j in range(1, n + 1):
        for i in range(1, n + 1):
            ip, im = mod1(i + 1, n), mod1(i - 1, n)
            jp, jm = mod1(j + 1, n), mod1(j - 1, n)
            sx[i, j] = limiter(c[ip, j] - c[i, j], c[i, j] - c[im, j])
            sy[i, j] = limiter(c[i, jp] - c[i, j], c[i, j] - c[i, jm])
    for j in range(1, n + 1):
        for i in range(1, n + 1):
            ip, jp = mod1(i + 1, n), mod1(j + 1, n)
            F[i, j] = face_flux(u[i, j], c[i, j], c[ip, j], sx[i, j], sx[ip, j])
            G[i, j] = face_flux(v[i, j], c[i, j], c[i, jp], sy[i, j], sy[i, jp])
    for j in range(1, n + 1):
        for i in range(1, n + 1):
            im, jm = mod1(i - 1, n), mod1(j - 1, n)
            cnew[i, j] = c[i, j] - lam * (F[i, j] - F[im, j]) - lam * (G[i, j] - G[i, jm])
    return cnew


def advect(c0, u, v, T, limiter):
    R = promote_type(c0.T, u.T, v.T)
    c, cnew = copyto(similar(c0, R), c0), similar(c0, R)
    sx, sy, F, G = similar(c0, R), similar(c0, R), similar(c0, R), similar(c0, R)
    for _ in range(T):
        muscl_step(cnew, c, u, v, sx, sy, F, G, limiter)
        c, cnew = cnew, c
    return c


def advection_misfit(c, cobs):
    R = promote_type(c.T, cobs.T)
    S = accumulator_type(R)
    s = zero(S)
    n, m = c.size()
    for j in range(1, m + 1):
        for i in range(1, n + 1):
            r = c[i, j] - cobs[i, j]
            s = s + square(convert(S, r))
    return convert(R, s)


def muscl_loss(c0, u, v, cobs, T):
    return advection_misfit(advect(c0, u, v, T, minmod), cobs)


def muscl_minmax_loss(c0, u, v, cobs, T):
    return advection_misfit(advect(c0, u, v, T, minmod_minmax), cobs)


# --- tridiagonal.jl -------------------------------------------------------------------------


def thomas_solve(x, cp, dp, a, b, c, d):
    m, n = b.size()
    for r in range(1, m + 1):
        cp[r, 1] = c[r, 1] / b[r, 1]
        dp[r, 1] = d[r, 1] / b[r, 1]
    for k in range(2, n + 1):
        for r in range(1, m + 1):
            w = b[r, k] - a[r, k] * cp[r, k - 1]
            if k <= n - 1:
                cp[r, k] = c[r, k] / w
            dp[r, k] = (d[r, k] - a[r, k] * dp[r, k - 1]) / w
    for r in range(1, m + 1):
        x[r, n] = dp[r, n]
    for k in range(n - 1, 0, -1):
        for r in range(1, m + 1):
            x[r, k] = dp[r, k] - cp[r, k] * x[r, k + 1]
    return x


def thomas_loss(a, b, c, d, xobs):
    T = promote_type(a.T, b.T, c.T, d.T, xobs.T)
    S = accumulator_type(T)
    m, n = b.size()
    x, cp, dp = zeros(T, m, n), zeros(T, m, n), zeros(T, m, n)
    thomas_solve(x, cp, dp, a, b, c, d)
    s = zero(S)
    for k in range(1, n + 1):
        for r in range(1, m + 1):
            s = s + square(convert(S, x[r, k] - xobs[r, k]))
    return convert(T, s)


# --- deposition.jl --------------------------------------------------------------------------


def cic_deposit(rho, pos, q):
    n = rho.size(1)
    half = convert(pos.T, 1 / 2)
    for p in range(1, pos.size(1) + 1):
        gx = pos[p, 1] * n - half
        gy = pos[p, 2] * n - half
        ix, jy = floor_int(gx), floor_int(gy)
        fx, fy = gx - ix, gy - jy
        i0, i1 = ix % n + 1, (ix + 1) % n + 1
        j0, j1 = jy % n + 1, (jy + 1) % n + 1
        rho[i0, j0] = rho[i0, j0] + q[p] * ((1 - fx) * (1 - fy))
        rho[i1, j0] = rho[i1, j0] + q[p] * (fx * (1 - fy))
        rho[i0, j1] = rho[i0, j1] + q[p] * ((1 - fx) * fy)
        rho[i1, j1] = rho[i1, j1] + q[p] * (fx * fy)
    return rho


def cic_loss(pos, q, rhoobs):
    T = promote_type(pos.T, q.T, rhoobs.T)
    S = accumulator_type(T)
    n = rhoobs.size(1)
    rho = zeros(T, n, n)
    cic_deposit(rho, pos, q)
    s = zero(S)
    for j in range(1, n + 1):
        for i in range(1, n + 1):
            r = rho[i, j] - rhoobs[i, j]
            s = s + square(convert(S, r))
    return convert(T, s)


# --- signed_grid.jl -------------------------------------------------------------------------


def signfit_residual(x, T, i: int, n: int):
    t = -convert(T, 1) + convert(T, 2 * (i - 1)) / convert(T, n - 1)
    r = sign(t)
    p = convert(T, 1)
    for j in range(1, x.size(1) + 1):
        r = r - x[j] * p
        p = p * t
    return r


def signfit_loss(x, w):
    T = promote_type(x.T, w.T)
    S = accumulator_type(T)
    n = w.size(1)
    s = zero(S)
    for i in range(1, n + 1):
        r = signfit_residual(x, T, i, n)
        s = s + convert(S, w[i]) * square(convert(S, r))
    return convert(T, s)


def signfit_loss_and_residuals(x, w):
    """`(L, {"r": r})`: the residuals gathered first (a comprehension), then summed."""
    T = promote_type(x.T, w.T)
    S = accumulator_type(T)
    n = w.size(1)
    r = [signfit_residual(x, T, i, n) for i in range(1, n + 1)]
    s = zero(S)
    for i in range(1, n + 1):
        s = s + convert(S, w[i]) * square(convert(S, r[i - 1]))
    return convert(T, s), {"r": r}


LOSSES = {
    "jacobi_loss": jacobi_loss,
    "lex_loss": lex_loss,
    "rb_loss": rb_loss,
    "muscl_loss": muscl_loss,
    "muscl_minmax_loss": muscl_minmax_loss,
    "thomas_loss": thomas_loss,
    "cic_loss": cic_loss,
    "signfit_loss": signfit_loss,
}


# The kernels that return outputs beside their loss (docs/outputs.md), by the name a
# fixture gives: `(L, {name: [values]})`.
WITH_OUTPUTS = {"signfit_loss_and_residuals": signfit_loss_and_residuals}


def _called(content: dict, arrays: dict, params: dict):
    args = []
    for name in content["arrays"]:
        a = arrays[name]
        T = type_of(a.flat[0]) if a.dtype == object else a.dtype.type
        args.append(JArray.of(a, T) if a.dtype != object else JArray(a, T))
    kernel = {**LOSSES, **WITH_OUTPUTS}[content["loss"]]
    return kernel(*args, *(int(params[p]) for p in content["params"]))


def julia_loss(content: dict, arrays: dict, params: dict):
    """The transliterated loss of a fixture (`julia/test/fixtures/<variant>.json`) on
    `arrays` (numpy, by name; each already in the element type it is to have: a float
    array, or an object array of duals) and the case's parameters; of a kernel that
    returns outputs, its loss alone (runtests.jl's `scalar_loss`: `LossAlone`)."""
    found = _called(content, arrays, params)
    return found[0] if content.get("outputs") else found


def julia_outputs(content: dict, arrays: dict, params: dict) -> dict:
    """The transliterated outputs of a fixture's kernel, `{name: [values]}`."""
    return _called(content, arrays, params)[1]
