# Reading the shared inputs and writing gradient files in the store's format, with
# HDF5.jl. Python counterparts: python/weanj/_inputs.py and python/weanj/_store.py.
#
# h5py writes numpy's C-order arrays; HDF5.jl returns Julia's column-major arrays, so it
# sees every dataset with its dimensions reversed: what it reads is the transpose (for a
# matrix; the axes reversed in general). `permutedims` once on reading and once on
# writing, here and nowhere else, keeps `θ[i, j]` == numpy's `theta[i-1, j-1]` everywhere
# else in julia/.

using Dates: Dates
using HDF5: h5open, create_group, read_attribute, write_attribute
using SHA: sha256

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
numpy's indices, in either direction (`x[i, j]` == numpy's `x[i-1, j-1]`).
"""
function reverse_axes(a::AbstractArray{T, N}) where {T, N}
    return permutedims(a, ntuple(k -> N + 1 - k, N))
end

"""
    inputs_digest(arrays...)

The inputs file's `sha256`: each array's little-endian Float64 values in C order,
concatenated, in the example's order. The arrays are passed as HDF5.jl read them (axes
reversed), whose column-major order is exactly numpy's C order.
"""
function inputs_digest(arrays...)
    bytes = UInt8[]
    for a in arrays
        append!(bytes, reinterpret(UInt8, htol.(vec(Float64.(a)))))
    end
    return bytes2hex(sha256(bytes))
end

"""
    read_inputs(path, example) -> (; arrays, params, sha256)

The shared inputs of `example` (a row of `WeanJ.EXAMPLES`) from `path`: a `Dict` of its
arrays as Float64 in numpy's index order, a `Dict` of its parameters (the values the file
records, used for checks) and the file's `sha256`. Checks what the Python reader checks
(python/weanj/_inputs.py): the datasets exist and hold finite floats, the `sha256`
matches them, the file is for this example, the parameters are integers ≥ 1. Every
failure, HDF5.jl's included, is an `InputFileError` whose message is one line.
"""
function read_inputs(path::AbstractString, example::NamedTuple)
    hint = "; regenerate it with `weanj inputs regenerate $(example.name)`"
    isfile(path) || throw(InputFileError("inputs file $path does not exist$hint"))
    fail(msg) = throw(InputFileError("inputs file $path $msg$hint"))
    try
        return h5open(path, "r") do file
            stored = Dict{String, Array{Float64}}() # as HDF5.jl reads them: axes reversed
            for name in example.arrays
                haskey(file, name) || fail("lacks the dataset $name")
                data = read(file, name)
                data isa Array{<:Union{Float32, Float64}} ||
                    fail("has a dataset $name of no float type")
                all(isfinite, data) || fail("has NaN/Inf values in $name")
                stored[name] = Float64.(data)
            end
            recorded = string(read_attribute(file, "sha256"))
            if inputs_digest((stored[name] for name in example.arrays)...) != recorded
                fail("does not match its recorded sha256 (modified or corrupt)")
            end
            found = string(read_attribute(file, "example"))
            found == example.name || fail("is for example $found")
            params = Dict{String, Int}()
            for name in example.params
                value = read_attribute(file, name)
                value isa Integer && value >= 1 ||
                    fail("has $name = $value; expected an integer ≥ 1")
                params[name] = Int(value)
            end
            arrays = Dict(name => reverse_axes(a) for (name, a) in stored)
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

Write the gradient array `g` as the dataset `name` of `parent` (axes reversed, as h5py
reads it) with the attribute `sha256`: the digest of its values in numpy's C order,
little-endian, in their own type, which the Python reader checks (python/weanj/_store.py).
The column-major order of the reversed array is exactly numpy's C order.
"""
function write_checked(parent, name::AbstractString, g::AbstractArray)
    stored = reverse_axes(g)
    write(parent, name, stored)
    digest = bytes2hex(sha256(reinterpret(UInt8, htol.(vec(stored)))))
    write_attribute(parent[name], "sha256", digest)
    return nothing
end

"""
    write_gradient(path, gradients, provenance)

A gradient file in the store's format (python/weanj/_store.py): one gradient array is
the dataset `gradient`, several are a group `gradient` with one dataset per array name
(`gradients`: `name => array` pairs in `wrt` order); h5py reads each as numpy's array
with `g[i-1, j-1] == g[i, j]`. Attributes: `provenance` (`name => value` pairs: `loss`,
`variant`, `family`, `example`, the parameters, `inputs_sha256`, `backend_version`),
then `dtype`, `backend = "julia"` and `created`. Written to a temporary file beside
`path` and renamed, so that a crash never leaves a half-written file.
"""
function write_gradient(
    path,
    gradients::AbstractVector{<:Pair},
    provenance::AbstractVector{<:Pair},
)
    T = eltype(last(first(gradients)))
    created = Dates.format(Dates.now(Dates.UTC), "yyyy-mm-ddTHH:MM:SS") * "+00:00"
    # dtype as numpy names it ("float64"); created as Python's isoformat writes it.
    attributes = Pair{String, Any}[provenance...]
    push!(
        attributes,
        "dtype" => lowercase(string(T)),
        "backend" => "julia",
        "created" => created,
    )
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
            for (key, value) in attributes
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
