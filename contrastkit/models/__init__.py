"""Encoders and projection heads."""
