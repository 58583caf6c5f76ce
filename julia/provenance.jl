# What identifies inputs and runs, computed as Python computes it: the inputs digest
# (python/weanj/_io/_inputs.py, `digest`) and the provenance key
# (python/weanj/_io/_h5.py, `provenance_key`), as docs/DESIGN.md defines them. Pure
# functions of arrays, names and numbers (SHA only, no HDF5), so that test/runtests.jl
# checks them against the values the Python side wrote into
# test/fixtures/provenance.json.
#
# Arrays are passed in numpy's index order (`x[i, j]` == numpy's `x[i-1, j-1]`); their
# C order, which both digests read, is the column-major order of the reversed axes.

using SHA: sha256

const DIGEST_HEADER = "weanj-inputs/2\n"
const KEY_HEADER = "weanj-key/2"

"""
    numpy_dtype(T) -> String

numpy's little-endian `dtype.str` of an element type (`"<f8"`, `"<c16"`, `"<i4"`,
`"|b1"`, ...), as the inputs digest names it.
"""
numpy_dtype(::Type{Float64}) = "<f8"
numpy_dtype(::Type{Float32}) = "<f4"
numpy_dtype(::Type{ComplexF64}) = "<c16"
numpy_dtype(::Type{ComplexF32}) = "<c8"
numpy_dtype(::Type{Bool}) = "|b1"
numpy_dtype(::Type{Int8}) = "|i1"
numpy_dtype(::Type{UInt8}) = "|u1"
numpy_dtype(::Type{T}) where {T <: Signed} = "<i$(sizeof(T))"
numpy_dtype(::Type{T}) where {T <: Unsigned} = "<u$(sizeof(T))"

"""
    c_order(a)

The values of `a` (numpy's index order) in numpy's C order: the last axis fastest.
"""
function c_order(a::AbstractArray{T, N}) where {T, N}
    return vec(permutedims(a, ntuple(k -> N + 1 - k, N)))
end
c_order(a::AbstractArray{T, 0}) where {T} = [a[]]

"""
    little_endian_bytes(a) -> Vector{UInt8}

The C-order bytes of `a` as numpy's `tobytes()` gives them for its little-endian dtype:
a `Bool` is one byte, 0 or 1; a complex number its real part, then its imaginary part.
"""
little_endian_bytes(a::AbstractArray{Bool}) = UInt8.(c_order(a))
function little_endian_bytes(a::AbstractArray{T}) where {T <: Number}
    return collect(reinterpret(UInt8, htol.(c_order(a))))
end

"""
    inputs_digest(names, arrays) -> String

The inputs digest (an inputs file's `sha256`): SHA-256 of `"weanj-inputs/2\\n"` and, for
each array in the example's order, its name, NUL, its numpy dtype string, NUL, its numpy
shape as decimals joined by `","` (empty for 0-d), NUL, and its C-order little-endian
bytes.
"""
function inputs_digest(names, arrays)
    bytes = Vector{UInt8}(codeunits(DIGEST_HEADER))
    for (name, a) in zip(names, arrays)
        shape = join(size(a), ",")
        append!(bytes, codeunits("$name\0$(numpy_dtype(eltype(a)))\0$shape\0"))
        append!(bytes, little_endian_bytes(a))
    end
    return bytes2hex(sha256(bytes))
end

"""
    param_text(value) -> String

A parameter as the provenance key spells it: `int:5`, `bool:true`, and a float as the
16 lowercase hex digits of its IEEE-754 binary64 bits (`float:3fb999999999999a` for 0.1):
no decimal formatting that could differ between languages.
"""
param_text(value::Bool) = value ? "bool:true" : "bool:false"
param_text(value::Integer) = "int:$value"
function param_text(value::AbstractFloat)
    return "float:" * string(reinterpret(UInt64, Float64(value)); base = 16, pad = 16)
end

"""
    provenance_key(inputs_sha256, params, dtype) -> String

The key deciding "the same inputs": SHA-256 (hex) of the lines `weanj-key/2`,
`inputs=<digest>`, `dtype=<float64|float32>`, then `param:<name>=<param_text>` for each
parameter sorted by name, each line ending in a newline. `params` are `name => value`
pairs, each value an `Int`, `Float64` or `Bool`.
"""
function provenance_key(inputs_sha256::AbstractString, params, dtype::AbstractString)
    lines = [KEY_HEADER, "inputs=$inputs_sha256", "dtype=$dtype"]
    for (name, value) in sort([String(k) => v for (k, v) in params]; by = first)
        push!(lines, "param:$name=$(param_text(value))")
    end
    return bytes2hex(sha256(join(lines, "\n") * "\n"))
end
