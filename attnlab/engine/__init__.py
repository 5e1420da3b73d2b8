"""The engine: a Transformer in plain PyTorch that records every step. Never imports Qt."""
