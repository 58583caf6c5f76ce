"""One evaluation: a variant's loss and gradient on some inputs, on a device, its calls
counted and its rounding level measured, held to the variant contract."""
