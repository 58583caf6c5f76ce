# Where julia/run.jl may write a gradient file: the store's rules, as `weanj run` applies
# them (python/weanj/_run.py `default_path`, python/weanj/_io/_store.py `check_target`):
#
#     results/<ex>/gradients/<variant>.h5          float64, on the shared inputs
#     results/<ex>/gradients/float32/<variant>.h5  float32, on the shared inputs
#     results/<ex>/recorded/<name>.h5              a reference, on the shared inputs;
#                                                  replaced only with --force
#     results/<ex>/runs/<variant>-<...>.h5         anything else (other parameters)
#
# "On the shared inputs" means the run's provenance key is the shared inputs' key at its
# dtype. Paths only: the one question that needs HDF5 (is an existing file outside
# results/ a gradient file?) is a function passed in, so that test/runtests.jl checks
# these rules against the cases the Python side wrote (test/fixtures/provenance.json).

"""
A gradient file may not go where it was asked to: reported in one line.
"""
struct StoreError <: Exception
    msg::String
end
Base.showerror(io::IO, e::StoreError) = print(io, e.msg)

"""
    resolved(path) -> String

`path` absolute, with the symbolic links of its existing part resolved, as Python's
`Path.resolve()` does (the part that does not exist yet is kept as written).
"""
function resolved(path::AbstractString)
    existing, rest = abspath(path), String[]
    while !ispath(existing) && dirname(existing) != existing
        pushfirst!(rest, basename(existing))
        existing = dirname(existing)
    end
    base = ispath(existing) ? realpath(existing) : existing
    return normpath(joinpath(base, rest...))
end

"""
    store_place(root, path) -> NamedTuple or nothing

Where `path` lies in the project's results: `(; example, kind, dtype)` with `kind` one
of "gradients", "recorded", "runs" or "other" (anything else under results/), or
`nothing` outside results/.
"""
function store_place(root::AbstractString, path::AbstractString)
    results = resolved(joinpath(root, "results"))
    target = resolved(path)
    startswith(target, joinpath(results, "")) || return nothing
    parts = splitpath(relpath(target, results))
    if length(parts) == 3 && parts[2] in ("gradients", "recorded", "runs")
        return (; example = parts[1], kind = parts[2], dtype = "float64")
    elseif length(parts) == 4 && parts[2] == "gradients" && parts[3] == "float32"
        return (; example = parts[1], kind = "gradients", dtype = "float32")
    end
    return (; example = isempty(parts) ? "" : parts[1], kind = "other", dtype = "float64")
end

"""
    store_run(example, variant, dtype, params, shared) -> NamedTuple

What the rules need to know of a run of `variant` of `example` in `dtype` with the
parameters `params` (`name => value` pairs, in the example's order) on the shared inputs,
whose parameters are `shared` (`name => value`): `fresh`, whether it is on the shared
inputs and their parameters (its key is then the shared key), and `differences`, what
sets it apart as file-name parts (`K5`, then `float32` for a float32 run), as
python/weanj/_run.py `differences` names them.
"""
function store_run(example, variant, dtype, params, shared)
    shared = Dict(shared)
    fresh = all(value == shared[name] for (name, value) in params)
    differences = ["$name$value" for (name, value) in params if value != shared[name]]
    dtype == "float64" || push!(differences, dtype)
    return (; example, variant, dtype, fresh, differences)
end

"""
    default_target(root, run) -> String

Where `weanj run` puts a run without `--out`: the store file of its variant and dtype
when it is on the shared inputs (`run.fresh`), else
`results/<ex>/runs/<variant>-<differences>.h5`. `run` has the fields `example`,
`variant`, `dtype`, `fresh` and `differences` (what sets it apart, as file-name parts:
`K5`, `float32`).
"""
function default_target(root::AbstractString, run)
    results = joinpath(root, "results", run.example)
    if run.fresh
        folder = run.dtype == "float64" ? "gradients" : joinpath("gradients", run.dtype)
        return joinpath(results, folder, "$(run.variant).h5")
    end
    return joinpath(results, "runs", join([run.variant, run.differences...], "-") * ".h5")
end

"""
    check_target(root, path, run; force = false, is_gradient_file = path -> false) -> String

`path` if the gradient of `run` may be written there, else a `StoreError` saying why:
under results/, a file of `gradients/` must be this variant's store file at this dtype
and on the shared inputs; a recorded reference must be on the shared inputs, and an
existing one is replaced only with `force` (the writer then keeps the old file aside);
`runs/` takes anything of the example; nothing else there. Elsewhere: not a directory,
not `shared_inputs/`, not an existing file that `is_gradient_file` does not accept.
"""
function check_target(
    root::AbstractString,
    path::AbstractString,
    run;
    force::Bool = false,
    is_gradient_file = path -> false,
)
    isempty(strip(path)) &&
        throw(StoreError("the output path is empty; give a file name, e.g. --out grad.h5"))
    target = expanduser(path)
    if isdir(target)
        example = joinpath(target, "gradient.h5")
        throw(StoreError("$target is a directory; give a file name, e.g. $example"))
    end
    above = dirname(abspath(target))
    while !ispath(above) && dirname(above) != above
        above = dirname(above)
    end
    isdir(above) ||
        throw(StoreError("cannot write $target: $above is a file, not a directory"))
    if dirname(resolved(target)) == resolved(joinpath(root, "shared_inputs"))
        folder = dirname(target)
        throw(StoreError("refusing to write a gradient into $folder (the shared inputs)"))
    end
    place = store_place(root, target)
    if place === nothing
        if ispath(target) && !is_gradient_file(target)
            throw(StoreError(
                "refusing to overwrite $target: it is not a readable weanj gradient " *
                    "file (only those are replaced); choose another file or remove it",
            ))
        end
        return target
    end
    check_store_place(target, place, run; force)
    return target
end

function check_store_place(target, place, run; force::Bool)
    ex = run.example
    if place.kind == "other" || place.example != ex || !endswith(target, ".h5")
        throw(StoreError(
            "refusing to write $target: under results/ weanj writes only " *
                "results/$ex/gradients/, recorded/ and runs/ files of $ex",
        ))
    end
    stem = first(splitext(basename(target)))
    if place.kind == "gradients"
        if stem != run.variant || place.dtype != run.dtype
            throw(StoreError(
                "refusing to write $(run.variant) ($(run.dtype)) to $target: that is " *
                    "the store file of $stem ($(place.dtype)); omit --out to use the store",
            ))
        end
        run.fresh ||
            throw(StoreError(
                "refusing to write $target: the store holds only gradients of the shared " *
                    "inputs and their parameters; omit --out (the run then goes to " *
                    "results/$ex/runs/)",
            ))
    elseif place.kind == "recorded"
        run.fresh ||
            throw(StoreError(
                "refusing to record $target: a reference must be computed on the shared " *
                    "inputs and their parameters",
            ))
        if ispath(target) && !force
            throw(StoreError(
                "$target exists: a recorded reference is replaced only with --force " *
                    "(the old file is then kept aside)",
            ))
        end
    end
    return nothing
end
