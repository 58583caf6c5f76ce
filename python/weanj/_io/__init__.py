"""Files: atomic writes, safe reading of HDF5, the inputs and the gradient store."""
