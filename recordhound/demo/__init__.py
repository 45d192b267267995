"""The demo record shop: a deterministic local catalog with the faults real shops have."""
