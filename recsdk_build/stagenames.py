"""The pipeline's stage names, in the order `recsdk-build all` runs them.

A leaf module: validating recsdk.toml (config) needs the names, and must not import the stages
(git, the ops code, the build helpers) to get them. stages/registry.py checks that its stage
objects carry exactly these names in this order.
"""

from __future__ import annotations

STAGE_NAMES: tuple[str, ...] = ("fetch", "patch", "ops", "env", "plugin", "wheels", "verify")
