# Reading the shared inputs and writing gradient files in the store's format, with
# HDF5.jl. Python counterparts: python/weanj/_inputs.py and python/weanj/_store.py.
#
# h5py writes numpy's C-order (n, n) arrays; HDF5.jl returns Julia's column-major arrays,
# so it sees every dataset with its dimensions reversed: what it reads is the transpose.
# `permutedims` once on reading and once on writing, here and nowhere else, keeps
# `θ[i, j]` == numpy's `theta[i-1, j-1]` everywhere else in julia/.

using Dates: Dates
using HDF5: h5open, read_attribute, write_attribute
using SHA: sha256

"""
A missing or corrupt inputs file: reported in one line by `julia/run.jl`.
"""
struct InputFileError <: Exception
    msg::String
end
Base.showerror(io::IO, e::InputFileError) = print(io, e.msg)

"""
    inputs_digest(arrays...)

The inputs file's `sha256`: each array's little-endian Float64 values in C order,
concatenated. The arrays are passed as HDF5.jl read them (dimensions reversed), whose
column-major order is exactly numpy's C order.
"""
function inputs_digest(arrays...)
    bytes = UInt8[]
    for a in arrays
        append!(bytes, reinterpret(UInt8, htol.(vec(Float64.(a)))))
    end
    return bytes2hex(sha256(bytes))
end

"""
    read_inputs(path, example) -> (; θ, uobs, K, sha256)

The shared inputs of `example` from `path`, in Julia's index order, with the `K` used for
checks and the file's `sha256` (checked against the arrays).
"""
function read_inputs(path::AbstractString, example::AbstractString)
    hint = "; regenerate it with `weanj inputs regenerate $example`"
    isfile(path) || throw(InputFileError("inputs file $path does not exist$hint"))
    return h5open(path, "r") do file
        # As h5py wrote them: dimensions reversed, C order in memory.
        theta_c, uobs_c = read(file, "theta"), read(file, "uobs")
        recorded = read_attribute(file, "sha256")
        if inputs_digest(theta_c, uobs_c) != recorded
            msg = "inputs file $path does not match its recorded sha256$hint"
            throw(InputFileError(msg))
        end
        θ, uobs = permutedims(theta_c), permutedims(uobs_c)
        return (; θ, uobs, K = Int(read_attribute(file, "K")), sha256 = recorded)
    end
end

"""
    write_gradient(path, g, provenance)

A gradient file in the store's format (python/weanj/_store.py): dataset `gradient`, which
h5py reads as numpy's `(n, n)` with `gradient[i-1, j-1] == g[i, j]`, and as attributes
`provenance` (`loss`, `variant`, `family`, `example`, `K`, `inputs_sha256`,
`backend_version`), `dtype`, `backend = "julia"` and `created`. Written to a temporary
file beside `path` and renamed, so that a crash never leaves a half-written file.
"""
function write_gradient(path, g::Matrix{T}, provenance::NamedTuple) where {T}
    created = Dates.format(Dates.now(Dates.UTC), "yyyy-mm-ddTHH:MM:SS") * "+00:00"
    # dtype as numpy names it ("float64"); created as Python's isoformat writes it.
    extra = (; dtype = lowercase(string(T)), backend = "julia", created)
    attributes = merge(provenance, extra)
    mkpath(dirname(path))
    tmp = joinpath(dirname(path), ".$(basename(path)).$(getpid()).tmp")
    try
        h5open(tmp, "w") do file
            write(file, "gradient", permutedims(g))
            for (key, value) in pairs(attributes)
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
