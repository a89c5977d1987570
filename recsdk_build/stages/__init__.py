"""One module per pipeline stage, in the order `recsdk-build all` runs them."""
