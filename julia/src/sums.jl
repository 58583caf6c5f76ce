# What every loss sums in. Python counterpart: none (each Python loss sums with jnp.sum).
#
# Every loss computes its terms in the element type of its arrays and adds them into a
# Float64 accumulator (julia/README.md, "Sums in Float64"). That type must follow the
# arrays when an AD pushes a number type of its own through the kernel: ForwardDiff's
# `Dual{Tag, Float32, N}` carries its derivatives beside the value, and `Float64(x)` of a
# dual number has no method. So the accumulator is `promote_type(Float64, T)`: Float64 for
# Float64 and Float32, and ForwardDiff's `Dual{Tag, Float64, N}` for its dual numbers
# (ForwardDiff's `promote_rule` of a Dual and a Real), whose value is summed exactly as a
# Float64 is and whose derivatives are summed beside it.

"""
    accumulator_type(T)

The type a loss with terms of type `T` sums them in: `promote_type(Float64, T)`, Float64
for Float64 and Float32, a dual number carrying Float64 for ForwardDiff's. A term `r` is
converted with `accumulator_type(T)(r)` and the sum rounded back with `T(s)`.
"""
accumulator_type(::Type{T}) where {T <: Real} = promote_type(Float64, T)
