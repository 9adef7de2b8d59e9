"""contrastkit: contrastive representation learning objectives, exactly as the papers define
them, with the diagnostics that explain why one beats another."""

__version__ = "0.1.0"
