# What Pkg compiles into WeanJ's package image: every kernel's loss on tiny inputs, in
# Float64 and Float32, called as weanj's worker calls it (`loss_value`). PrecompileTools'
# `@compile_workload` runs this block only while the package is being precompiled, with
# the interpreter off, and caches every method it calls, WeanJ's and Base's alike; later
# sessions load the compiled kernels instead of compiling them again.
#
# Enzyme's gradients are left out on purpose. Enzyme keeps a compiled gradient as the
# address its just-in-time compiler gave it in the process that compiled it, so a
# gradient compiled here and saved in the image would point into a dead process when a
# later session loads it (Enzyme.jl #1549, #681; #3525 describes exactly this, and #3518,
# which would make gradients survive in package images, was closed unmerged). Each
# worker compiles a kernel's gradient once, on its first use.

using PrecompileTools: @compile_workload, @setup_workload

@setup_workload begin
    # Inputs every kernel's checks accept: square grids, |u|, |v| ≤ 1, a diagonally
    # dominant tridiagonal system, particles inside the unit square, n ≥ 2 weights.
    n = 3
    @compile_workload begin
        for R in (Float64, Float32)
            θ, uobs = fill(R(1), n, n), fill(R(1 // 2), n, n)
            for loss in (jacobi_loss, lex_loss, rb_loss)
                loss_value(loss, θ, uobs, 2)
            end
            c0 = R[i + j for i in 1:n, j in 1:n]
            u, v = fill(R(1 // 2), n, n), fill(R(-1 // 2), n, n)
            for loss in (muscl_loss, muscl_minmax_loss)
                loss_value(loss, c0, u, v, uobs, 2)
            end
            a, b, c = fill(R(1), n, n), fill(R(4), n, n), fill(R(1), n, n)
            loss_value(thomas_loss, a, b, c, θ, uobs)
            pos, q = R[0.25 0.5; 0.75 0.125], R[1, 2]
            loss_value(cic_loss, pos, q, uobs)
            loss_value(signfit_loss, R[1, 1 // 2], fill(R(1), 5))
            # julia-signfit's kernel, its loss alone as the worker calls it (`LossAlone`)
            loss_value(LossAlone(signfit_loss_and_residuals), R[1, 1 // 2], fill(R(1), 5))
        end
    end
end
