# Run every Julia variant of one example on its shared inputs, from Julia alone:
#
#     julia --project=. julia/run.jl 02-gauss-seidel [--dtype float32] [--K 20]
#
# writes results/<example>/gradients/<variant>.h5 in the store's format under the project
# root ($WEANJ_ROOT if set, else this checkout), so that `weanj diff <example>` compares
# them with every other variant's. Mistakes print one line and exit with code 2, as the
# `weanj` command line does.

include(joinpath(@__DIR__, "WeanJ.jl"))
include(joinpath(@__DIR__, "io.jl"))
using .WeanJ: VARIANTS, backend_version, gradient

const USAGE = "usage: julia --project=. julia/run.jl EXAMPLE [--dtype float64|float32] [--K K]"

"""
A mistake on the command line: reported in one line.
"""
struct UsageError <: Exception
    msg::String
end
Base.showerror(io::IO, e::UsageError) = print(io, e.msg)

function parse_arguments(args)
    isempty(args) && throw(UsageError(USAGE))
    example, options = args[1], args[2:end]
    dtype, K = "float64", nothing
    while !isempty(options)
        flag = popfirst!(options)
        isempty(options) && throw(UsageError("$flag needs a value; $USAGE"))
        value = popfirst!(options)
        if flag == "--dtype" && value in ("float64", "float32")
            dtype = value
        elseif flag == "--K" && something(tryparse(Int, value), 0) >= 1
            K = parse(Int, value)
        else
            throw(UsageError("bad option $flag $value; $USAGE"))
        end
    end
    return (; example, dtype, K)
end

function main(args)
    options = parse_arguments(args)
    example = options.example
    variants = [v for v in VARIANTS if v.example == example]
    if isempty(variants)
        known = join(sort(unique(v.example for v in VARIANTS)), ", ")
        throw(UsageError("no Julia variants of $example; examples that have some: $known"))
    end
    root = get(ENV, "WEANJ_ROOT", dirname(@__DIR__))
    inputs = read_inputs(joinpath(root, "shared_inputs", "$example.h5"), example)
    T = options.dtype == "float32" ? Float32 : Float64
    θ, uobs = T.(inputs.θ), T.(inputs.uobs)
    K = something(options.K, inputs.K)
    for v in variants
        loss = v.loss(θ, uobs, K)
        g = gradient(v.loss, θ, uobs, K)
        path = joinpath(root, "results", example, "gradients", "$(v.name).h5")
        provenance = (;
            loss = Float64(loss),
            variant = v.name,
            family = v.family,
            example,
            K,
            inputs_sha256 = inputs.sha256,
            backend_version = backend_version(),
        )
        write_gradient(path, g, provenance)
        println("$example $(v.name) K=$K $(options.dtype): loss = $loss")
        println("saved $path")
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
