"""The ops stage machinery: catalogue (op.toml), code generation, CANN projects, sim builds."""
