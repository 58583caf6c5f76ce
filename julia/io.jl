# Reading the shared inputs (format 2) and writing gradient files (format 2) with
# HDF5.jl. Python counterparts: python/weanj/_io/_inputs.py and python/weanj/_io/_store.py;
# the digest and the provenance key are provenance.jl's, the store's rules store.jl's.
#
# h5py writes numpy's C-order arrays; HDF5.jl returns Julia's column-major arrays, so it
# sees every dataset with its dimensions reversed: what it reads is the transpose (for a
# matrix; the axes reversed in general). `reverse_axes` once on reading and once on
# writing, here and nowhere else, keeps `θ[i, j]` == numpy's `theta[i-1, j-1]` everywhere
# else in julia/.
#
# Types as HDF5.jl maps them (src/typeconversions.jl, read, not run here): h5py's complex
# (a compound of `r` and `i`) reads as `Complex{T}`, h5py's bool (an enum over Int8)
# reads as `Int8`, and a scalar dataset as a scalar. Julia writes `Int64`, `Float64` and
# `Complex{T}` in the layouts h5py reads as int64, float64 and complex; it writes no bool
# attribute (HDF5.jl's `Bool` is a bitfield, which h5py does not read as bool).

include(joinpath(@__DIR__, "provenance.jl"))
include(joinpath(@__DIR__, "store.jl"))

using Dates: Dates
using HDF5: HDF5, h5open, create_group, read_attribute, write_attribute

const FORMAT = 2

"""
A missing, unreadable or invalid inputs file: reported in one line by `julia/run.jl`.
"""
struct InputFileError <: Exception
    msg::String
end
Base.showerror(io::IO, e::InputFileError) = print(io, e.msg)

"""
    first_line(e) -> String

The first line of an exception's message (HDF5.jl's errors carry the library's whole
error stack after it).
"""
first_line(e) = String(first(split(sprint(showerror, e), '\n')))

"""
    reverse_axes(a)

`a` with its axes in the opposite order: between HDF5.jl's view of an h5py dataset and
numpy's indices, in either direction (`x[i, j]` == numpy's `x[i-1, j-1]`). A scalar
(HDF5.jl's reading of a 0-d dataset) becomes a 0-d array.
"""
function reverse_axes(a::AbstractArray{T, N}) where {T, N}
    return permutedims(a, ntuple(k -> N + 1 - k, N))
end
reverse_axes(a::AbstractArray{T, 0}) where {T} = copy(a)
reverse_axes(x::Number) = fill(x)

"""
    typed_array(data, kind, fail) -> Array

A dataset as HDF5.jl read it, checked against the array's kind (`WeanJ.EXAMPLES`):
"float" must be Float64 and finite, "complex" ComplexF64 and finite, "int" and "index"
any integer type (kept), "bool" h5py's bool (read as Int8 0/1; a `Bool` array is taken
as it is). `fail(msg)` throws.
"""
function typed_array(data, kind::AbstractString, fail)
    a = reverse_axes(data)
    T = eltype(a)
    if kind == "float"
        T == Float64 || fail("holds $T values where float64 is declared")
        all(isfinite, a) || fail("has NaN/Inf values")
    elseif kind == "complex"
        T == ComplexF64 || fail("holds $T values where complex128 is declared")
        all(isfinite, a) || fail("has NaN/Inf values")
    elseif kind in ("int", "index")
        (T <: Integer && T != Bool) || fail("holds $T values where integers are declared")
    elseif kind == "bool"
        if T <: Integer && T != Bool
            all(x -> x == 0 || x == 1, a) || fail("holds values other than 0 and 1")
            a = Bool.(a)
        end
        eltype(a) == Bool || fail("holds $T values where bool is declared")
    else
        fail("has the unknown kind $kind")
    end
    return a
end

"""
    typed_param(value, kind, name, fail)

A parameter attribute as its kind's Julia type (`Int`, `Float64`, `Bool`), within the
built-in examples' ranges (int: 1 to 2^31 - 1; float: finite), or `fail(msg)`.
"""
function typed_param(value, kind::AbstractString, name, fail)
    if kind == "int" && value isa Integer && !(value isa Bool)
        1 <= value <= typemax(Int32) && return Int(value)
        fail("has $name = $value; expected an integer from 1 to $(typemax(Int32))")
    elseif kind == "float" && value isa Real && !(value isa Bool)
        isfinite(value) && return Float64(value)
        fail("has $name = $value; expected a finite number")
    elseif kind == "bool" && (value isa Bool || (value isa Integer && value in (0, 1)))
        return Bool(value)
    end
    return fail("has $name = $(repr(value)); expected a $kind parameter")
end

"""
    read_inputs(path, example) -> (; arrays, params, sha256)

The shared inputs of `example` (a row of `WeanJ.EXAMPLES`) from `path`, format 2: a
`Dict` of its arrays in numpy's index order (index arrays as stored, 0-based), its
parameters as `name => value` pairs in the example's order (the values the file
records) and the file's `sha256`. Checks what the Python reader checks
(python/weanj/_io/_inputs.py): `format = 2` (a format-1 file is refused with the command
that rewrites it), the file is for this example, the datasets exist with their declared
kinds and finite floats, the recorded `sha256` is the digest of the arrays
(provenance.jl), the parameters have their kinds. Every failure, HDF5.jl's included, is
an `InputFileError` whose message is one line.
"""
function read_inputs(path::AbstractString, example::NamedTuple)
    regenerate = "`weanj inputs regenerate $(example.name)`"
    hint = "; regenerate it with $regenerate"
    isfile(path) || throw(InputFileError("inputs file $path does not exist$hint"))
    fail(msg) = throw(InputFileError("inputs file $path $msg$hint"))
    try
        return h5open(path, "r") do file
            attrs = HDF5.attributes(file)
            if !haskey(attrs, "format")
                throw(InputFileError(
                    "inputs file $path was written by an earlier weanj (format 1, " *
                        "not $FORMAT); rewrite it with $regenerate",
                ))
            end
            format = read_attribute(file, "format")
            format == FORMAT || fail("has format $format, which this julia/ does not read")
            found = string(read_attribute(file, "example"))
            found == example.name || fail("is for example $found")
            arrays = Dict{String, Array}()
            for (name, kind) in zip(example.arrays, example.kinds)
                haskey(file, name) || fail("lacks the dataset $name")
                arrays[name] = typed_array(
                    read(file, name),
                    kind,
                    msg -> fail("$name: $msg"),
                )
            end
            recorded = string(read_attribute(file, "sha256"))
            digest = inputs_digest(example.arrays, [arrays[a] for a in example.arrays])
            digest == recorded ||
                fail("does not match its recorded sha256 (modified or corrupt)")
            params = Pair{String, Any}[]
            for (name, kind) in zip(example.params, example.param_kinds)
                haskey(attrs, name) || fail("lacks the parameter attribute $name")
                push!(
                    params,
                    name => typed_param(read_attribute(file, name), kind, name, fail),
                )
            end
            return (; arrays, params, sha256 = recorded)
        end
    catch e
        e isa InputFileError && rethrow()
        e isa InterruptException && rethrow()
        # Anything else from HDF5.jl (a truncated file, a missing attribute, ...).
        throw(InputFileError("cannot read inputs file $path ($(first_line(e)))$hint"))
    end
end

"""
    write_checked(parent, name, g)

Write the gradient array `g` (numpy's index order) as the dataset `name` of `parent`,
axes reversed, as h5py reads it, with the attribute `sha256`: the digest of its values
in numpy's C order, little-endian, in their own type (Python's `array_sha256`, which
the reader checks).
"""
function write_checked(parent, name::AbstractString, g::AbstractArray)
    write(parent, name, ndims(g) == 0 ? g[] : reverse_axes(g))
    write_attribute(parent[name], "sha256", bytes2hex(sha256(little_endian_bytes(g))))
    return nothing
end

"""
    write_gradient(path, gradients, attributes)

A gradient file in the store's format 2 (python/weanj/_io/_store.py): one gradient array
is the dataset `gradient`, several are a group `gradient` with one dataset per array name
(`gradients`: `name => array` pairs in `wrt` order). `attributes` are `name => value`
pairs written as they are (`format`, `key`, `loss`, `variant`, `family`, `example`, the
parameters as `Int`/`Float64`, `dtype`, `inputs_sha256`, `backend_version`), then
`backend = "julia"` and `created`. Written to a temporary file beside `path` and renamed,
so that a crash never leaves a half-written file.
"""
function write_gradient(
    path,
    gradients::AbstractVector{<:Pair},
    attributes::AbstractVector{<:Pair},
)
    created = Dates.format(Dates.now(Dates.UTC), "yyyy-mm-ddTHH:MM:SS") * "+00:00"
    # created as Python's isoformat writes it.
    everything = Pair{String, Any}[attributes...]
    push!(everything, "backend" => "julia", "created" => created)
    for (name, value) in everything
        value isa Bool &&
            throw(ArgumentError("bool attribute $name: h5py would not read it"))
    end
    mkpath(dirname(path))
    tmp = joinpath(dirname(path), ".$(basename(path)).$(getpid()).tmp")
    try
        h5open(tmp, "w") do file
            if length(gradients) == 1
                write_checked(file, "gradient", last(only(gradients)))
            else
                group = create_group(file, "gradient")
                for (name, g) in gradients
                    write_checked(group, name, g)
                end
            end
            for (key, value) in everything
                write_attribute(file, String(key), value)
            end
        end
        # rename(2) replaces `path` in one step (`mv(...; force = true)` removes it first).
        Base.Filesystem.rename(tmp, path)
    catch
        rm(tmp; force = true)
        rethrow()
    end
    return path
end

"""
    keep_aside(path) -> String or nothing

Move an existing file out of the way (`<name>.replaced-<UTC time>`, as the Python
store does) before a recorded reference is replaced with `--force`.
"""
function keep_aside(path::AbstractString)
    ispath(path) || return nothing
    stamp = Dates.format(Dates.now(Dates.UTC), "yyyymmddTHHMMSS")
    aside, k = "$path.replaced-$stamp", 1
    while ispath(aside)
        k += 1
        aside = "$path.replaced-$stamp-$k"
    end
    Base.Filesystem.rename(path, aside)
    return aside
end

"""
    is_gradient_file(path) -> Bool

Whether `path` is an HDF5 file holding a weanj gradient (a `gradient` dataset or group
and a `variant` attribute): the only files outside results/ that run.jl replaces.
"""
function is_gradient_file(path::AbstractString)
    try
        return h5open(path, "r") do file
            haskey(file, "gradient") && haskey(HDF5.attributes(file), "variant")
        end
    catch e
        e isa InterruptException && rethrow()
        return false
    end
end
