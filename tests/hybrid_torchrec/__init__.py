"""hybrid_torchrec's tests, a package so that module names such as test_docs do not clash with
the same names in tests/embcache."""
