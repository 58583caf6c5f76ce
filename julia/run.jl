# Run every Julia variant of one example on its shared inputs, from Julia alone:
#
#     julia --project=. julia/run.jl 02-gauss-seidel [--dtype float32] [--K 20]
#
# writes results/<example>/gradients/<variant>.h5 in the store's format under the project
# root ($WEANJ_ROOT if set, else this checkout), so that `weanj diff <example>` compares
# them with every other variant's. Each parameter of the example is an option
# (`--K 20`); its default is the value the inputs file records. Mistakes and bad inputs
# files print one line and exit with code 2, as the `weanj` command line does; a stack
# trace means a bug here, not in the input.

include(joinpath(@__DIR__, "src", "WeanJ.jl"))
include(joinpath(@__DIR__, "io.jl"))
using .WeanJ: EXAMPLES, VARIANTS, backend_version, enzyme_gradient

const USAGE = "usage: julia --project=. julia/run.jl EXAMPLE [--dtype float64|float32] [--PARAM VALUE]"

"""
A mistake on the command line: reported in one line.
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

function parse_arguments(args)
    isempty(args) && throw(UsageError(USAGE))
    example, options = example_named(args[1]), args[2:end]
    dtype, params = "float64", Dict{String, Int}()
    while !isempty(options)
        flag = popfirst!(options)
        isempty(options) && throw(UsageError("$flag needs a value; $USAGE"))
        value = popfirst!(options)
        name = startswith(flag, "--") ? String(flag[3:end]) : ""
        if flag == "--dtype" && value in ("float64", "float32")
            dtype = value
        elseif name in example.params && something(tryparse(Int, value), 0) >= 1
            params[name] = parse(Int, value)
        else
            throw(UsageError("bad option $flag $value; $USAGE"))
        end
    end
    return (; example, dtype, params)
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

function main(args)
    options = parse_arguments(args)
    example = options.example
    root = get(ENV, "WEANJ_ROOT", dirname(@__DIR__))
    path = joinpath(root, "shared_inputs", "$(example.name).h5")
    inputs = read_inputs(path, example)
    T = options.dtype == "float32" ? Float32 : Float64
    params = merge(inputs.params, options.params)
    args = (
        (T.(inputs.arrays[name]) for name in example.arrays)...,
        (params[name] for name in example.params)...
    )
    # Enzyme's flags: the `wrt` arrays are differentiated, every other argument is constant.
    wrt = (
        (name in example.wrt for name in example.arrays)...,
        (false for _ in example.params)...
    )
    # The gradients come back in argument order; the store lists them in `wrt` order.
    flagged = [name for name in example.arrays if name in example.wrt]
    for v in VARIANTS
        v.example == example.name || continue
        loss = evaluate(v.loss, args, path)
        by_name = Dict(zip(flagged, enzyme_gradient(v.loss, wrt, args...)))
        gradients = [name => by_name[name] for name in example.wrt]
        target = joinpath(root, "results", example.name, "gradients", "$(v.name).h5")
        provenance = [
            "loss" => Float64(loss),
            "variant" => v.name,
            "family" => v.family,
            "example" => example.name,
            (name => params[name] for name in example.params)...,
            "inputs_sha256" => inputs.sha256,
            "backend_version" => backend_version(),
        ]
        write_gradient(target, gradients, provenance)
        settings = join(("$name=$(params[name])" for name in example.params), " ")
        println("$(example.name) $(v.name) $settings $(options.dtype): loss = $loss")
        println("saved $target")
    end
    return 0
end

if abspath(PROGRAM_FILE) == @__FILE__
    try
        exit(main(copy(ARGS)))
    catch e
        e isa Union{UsageError, InputFileError} || rethrow()
        println(stderr, "run.jl: error: ", sprint(showerror, e))
        exit(2)
    end
end
