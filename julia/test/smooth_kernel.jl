# A user's kernel: loops over two vectors and a parameter. runtests.jl includes it as a
# user's file; tests/crossval/test_julia.py registers it as a user's Julia variant.
function smooth_loss(x, y, S)
    s = 0.0
    for i in eachindex(x, y)
        s += (S * x[i] - y[i])^2
    end
    return s
end
