# Run the Julia variants of one example on its shared inputs, from Julia alone:
#
#     julia --project=. julia/run.jl 02-gauss-seidel [--variant julia-lex]
#         [--dtype float64|float32] [--K 20] [--out FILE] [--force]
#
# under the project root ($WEANJ_ROOT if set, else this checkout), with the rules of
# `weanj run` (store.jl): on the shared inputs and their parameters a float64 gradient
# goes to results/<example>/gradients/<variant>.h5 and a float32 one to
# results/<example>/gradients/float32/<variant>.h5, where `weanj diff <example>` compares
# them with every other variant's; with other parameter values it goes to
# results/<example>/runs/ (never compared). `--out` names the file instead (one variant:
# `--variant`, or an example with one Julia variant); a recorded reference
# (results/<example>/recorded/) is replaced only with `--force`, the old file kept aside.
# Each parameter of the example is an option (`--K 20`); its default is the value the
# inputs file records. The files are format 2, with the provenance key (provenance.jl).
# Mistakes and bad inputs files print one line and exit with code 2, as the `weanj`
# command line does; a stack trace means a bug here, not in the input.

include(joinpath(@__DIR__, "src", "WeanJ.jl"))
include(joinpath(@__DIR__, "io.jl"))
using .WeanJ: EXAMPLES, VARIANTS, backend_version, enzyme_gradient

const USAGE = "usage: julia --project=. julia/run.jl EXAMPLE [--variant V] " *
    "[--dtype float64|float32] [--PARAM VALUE] [--out FILE] [--force]"

"""
A mistake on the command line, or a run whose result cannot be saved: one line.
"""
struct UsageError <: Exception
    msg::String
end
Base.showerror(io::IO, e::UsageError) = print(io, e.msg)

"""
    example_named(name)

The row of `WeanJ.EXAMPLES` called `name`, if some Julia variant computes it.
"""
function example_named(name::AbstractString)
    for example in EXAMPLES
        if example.name == name && any(v.example == name for v in VARIANTS)
            return example
        end
    end
    known = join(sort(unique(v.example for v in VARIANTS)), ", ")
    throw(UsageError("no Julia variants of $name; examples that have some: $known"))
end

"""
    parse_param(kind, text)

A command-line value of a parameter of `kind`, as `weanj run` parses it
(python/weanj/_model/_params.py), or `nothing`.
"""
function parse_param(kind::AbstractString, text::AbstractString)
    if kind == "int"
        value = tryparse(Int, text)
        return value !== nothing && 1 <= value <= typemax(Int32) ? value : nothing
    elseif kind == "float"
        value = tryparse(Float64, text)
        return value !== nothing && isfinite(value) ? value : nothing
    end
    return nothing
end

function parse_arguments(args)
    isempty(args) && throw(UsageError(USAGE))
    example, options = example_named(args[1]), args[2:end]
    if "bool" in example.param_kinds
        # HDF5.jl writes a Bool as a bitfield, which h5py does not read as bool (io.jl).
        throw(UsageError("$(example.name) has bool parameters, which run.jl cannot record"))
    end
    dtype, params = "float64", Dict{String, Any}()
    variant, out, force = nothing, nothing, false
    while !isempty(options)
        flag = popfirst!(options)
        if flag == "--force"
            force = true
            continue
        end
        isempty(options) && throw(UsageError("$flag needs a value; $USAGE"))
        value = popfirst!(options)
        name = startswith(flag, "--") ? String(flag[3:end]) : ""
        at = findfirst(==(name), example.params)
        if flag == "--dtype" && value in ("float64", "float32")
            dtype = value
        elseif flag == "--variant" &&
                any(v -> v.example == example.name && v.name == value, VARIANTS)
            variant = value
        elseif flag == "--out"
            out = value
        elseif at !== nothing && parse_param(example.param_kinds[at], value) !== nothing
            params[name] = parse_param(example.param_kinds[at], value)
        else
            throw(UsageError("bad option $flag $value; $USAGE"))
        end
    end
    variants = [v for v in VARIANTS if v.example == example.name]
    variant === nothing || filter!(v -> v.name == variant, variants)
    if out !== nothing && length(variants) != 1
        names = join((v.name for v in variants), ", ")
        throw(UsageError(
            "--out names one file; choose one variant with --variant ($names)",
        ))
    end
    return (; example, dtype, params, variants, out, force)
end

"""
    evaluate(loss, args, path)

`loss(args...)`, with the one-line errors of the kernels' own checks (shapes that do
not fit together, out-of-range values) reported as a bad inputs file.
"""
function evaluate(loss, args, path)
    try
        return loss(args...)
    catch e
        e isa Union{DimensionMismatch, ArgumentError} || rethrow()
        throw(InputFileError("inputs file $path: $(first_line(e))"))
    end
end

"""
    run_array(a, kind, T)

A stored array as a kernel receives it in a run in `T`: floats cast to `T`, complex
numbers to `Complex{T}`, index arrays plus one (Julia's indices start at 1), integers
and bools as they are.
"""
function run_array(a::AbstractArray, kind::AbstractString, ::Type{T}) where {T}
    kind == "float" && return T.(a)
    kind == "complex" && return Complex{T}.(a)
    kind == "index" && return a .+ one(eltype(a))
    return a
end

"""
    plan(options, inputs, root) -> (; params, key, fresh, targets)

The run's parameters (`name => value`, the file's unless given), its provenance key,
whether it is on the shared inputs (the file's parameters: its key is the shared key)
and the file each variant's gradient goes to, all checked before anything is computed:
a place no gradient may go is refused before Enzyme runs.
"""
function plan(options, inputs, root)
    example, dtype = options.example, options.dtype
    shared = Dict(inputs.params)
    params = [name => get(options.params, name, shared[name]) for name in example.params]
    key = provenance_key(inputs.sha256, params, dtype)
    runs = [
        store_run(example.name, v.name, dtype, params, shared)
        for v in options.variants
    ]
    targets = map(runs) do run
        path = something(options.out, default_target(root, run))
        check_target(root, path, run; options.force, is_gradient_file)
    end
    return (; params, key, fresh = all(run -> run.fresh, runs), targets)
end

function main(args)
    options = parse_arguments(args)
    example = options.example
    root = get(ENV, "WEANJ_ROOT", dirname(@__DIR__))
    path = joinpath(root, "shared_inputs", "$(example.name).h5")
    inputs = read_inputs(path, example)
    planned = plan(options, inputs, root)
    T = options.dtype == "float32" ? Float32 : Float64
    args = (
        (
            run_array(inputs.arrays[a], k, T)
            for (a, k) in zip(example.arrays, example.kinds)
        )...,
        (last(p) for p in planned.params)...
    )
    # Enzyme's flags: the `wrt` arrays are differentiated, every other argument is constant.
    wrt = (
        (name in example.wrt for name in example.arrays)...,
        (false for _ in example.params)...
    )
    # The gradients come back in argument order; the file lists them in `wrt` order.
    flagged = [name for name in example.arrays if name in example.wrt]
    for (v, target) in zip(options.variants, planned.targets)
        loss = evaluate(v.loss, args, path)
        by_name = Dict(zip(flagged, enzyme_gradient(v.loss, wrt, args...)))
        gradients = [name => by_name[name] for name in example.wrt]
        if !isfinite(loss) || !all(g -> all(isfinite, last(g)), gradients)
            throw(UsageError(
                "$(v.name) produced NaN/Inf on these inputs; nothing was saved",
            ))
        end
        # Typed as written (Int64, Float64, String): a plain vector would promote them.
        attributes = Pair{String, Any}[]
        push!(
            attributes,
            "format" => FORMAT,
            "key" => planned.key,
            "loss" => Float64(loss),
            "variant" => v.name,
            "family" => v.family,
            "example" => example.name,
            planned.params...,
            "dtype" => options.dtype,
            "inputs_sha256" => inputs.sha256,
            "backend_version" => backend_version(),
        )
        place = store_place(root, target)
        if options.force && place !== nothing && place.kind == "recorded"
            aside = keep_aside(target)
            aside === nothing || println("kept the previous recorded file as $aside")
        end
        write_gradient(target, gradients, attributes)
        settings = join(("$name=$value " for (name, value) in planned.params))
        println("$(example.name) $(v.name) $settings$(options.dtype): loss = $loss")
        println("saved $target")
        if options.out === nothing && !planned.fresh
            println(
                "not saved to the store: computed with other parameters than the shared " *
                    "inputs'; the store holds only gradients of the shared inputs and their " *
                    "parameters, which the judge compares",
            )
        end
    end
    return 0
end

if abspath(PROGRAM_FILE) == @__FILE__
    try
        exit(main(copy(ARGS)))
    catch e
        e isa Union{UsageError, InputFileError, StoreError} || rethrow()
        println(stderr, "run.jl: error: ", sprint(showerror, e))
        exit(2)
    end
end
