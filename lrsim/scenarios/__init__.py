"""Shipped scenario files (TOML) for `lr simulate --scenario NAME`."""
