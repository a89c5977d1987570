"""The stage graph: fingerprints, cache, lock, atomic outputs and the manifest."""
